//go:build realpeers

package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// sourceDateEpoch is fixed so the rebuild below sees the same inputs even
// when HEAD moves meanwhile.
const sourceDateEpoch = 1700000000

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations"`
	Platform    *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform"`
}

type imageConfig struct {
	Created      time.Time `json:"created"`
	OS           string    `json:"os"`
	Architecture string    `json:"architecture"`
	RootFS       struct {
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
	Config struct {
		User         string              `json:"User"`
		Entrypoint   []string            `json:"Entrypoint"`
		Cmd          []string            `json:"Cmd"`
		Env          []string            `json:"Env"`
		ExposedPorts map[string]struct{} `json:"ExposedPorts"`
		Labels       map[string]string   `json:"Labels"`
	} `json:"config"`
}

func TestImageRunsAsNonrootFromScratch(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	version := fmt.Sprintf("test-%d", os.Getpid())
	out := t.TempDir()
	env := append(os.Environ(), "VERSION="+version, "FLINKMAINT_IMAGE_DIR="+out, fmt.Sprintf("SOURCE_DATE_EPOCH=%d", sourceDateEpoch))

	build := exec.CommandContext(t.Context(), filepath.Join(root, "scripts", "image.sh"))
	build.Env = env
	start := time.Now()
	output, err := build.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/image.sh: %v\n%s", err, output)
	}
	t.Logf("scripts/image.sh took %s", time.Since(start).Round(time.Second))
	tarball := filepath.Join(out, "flinkmaint-worker-"+version+".oci.tar")
	printed := printedDigest(t, output)

	layoutDir := t.TempDir()
	untar(t, tarball, layoutDir)
	var index struct {
		SchemaVersion int          `json:"schemaVersion"`
		Manifests     []descriptor `json:"manifests"`
	}
	readJSON(t, filepath.Join(layoutDir, "index.json"), &index)
	if index.SchemaVersion != 2 || len(index.Manifests) != 1 {
		t.Fatalf("index.json: schemaVersion %d with %d manifests, want 2 with one", index.SchemaVersion, len(index.Manifests))
	}
	desc := index.Manifests[0]
	if got, want := desc.Annotations["org.opencontainers.image.ref.name"], "flinkmaint-worker:"+version; got != want {
		t.Errorf("index ref.name = %q, want %q", got, want)
	}
	if desc.Platform == nil || desc.Platform.OS != "linux" || desc.Platform.Architecture != runtime.GOARCH {
		t.Errorf("index platform = %+v, want linux/%s", desc.Platform, runtime.GOARCH)
	}
	if desc.Digest != printed {
		t.Errorf("index names manifest %s, the tool printed %s", desc.Digest, printed)
	}

	var manifest struct {
		MediaType string       `json:"mediaType"`
		Config    descriptor   `json:"config"`
		Layers    []descriptor `json:"layers"`
	}
	if err := json.Unmarshal(blob(t, layoutDir, desc), &manifest); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	if manifest.MediaType != "application/vnd.oci.image.manifest.v1+json" || len(manifest.Layers) == 0 {
		t.Fatalf("manifest: media type %q with %d layers", manifest.MediaType, len(manifest.Layers))
	}
	var cfg imageConfig
	if err := json.Unmarshal(blob(t, layoutDir, manifest.Config), &cfg); err != nil {
		t.Fatalf("config: %v", err)
	}
	checkConfig(t, cfg, version)
	if len(cfg.RootFS.DiffIDs) != len(manifest.Layers) {
		t.Fatalf("config has %d diff_ids for %d layers", len(cfg.RootFS.DiffIDs), len(manifest.Layers))
	}

	rootfs := t.TempDir()
	headers := map[string]*tar.Header{}
	for i, l := range manifest.Layers {
		if l.MediaType != "application/vnd.oci.image.layer.v1.tar+gzip" {
			t.Fatalf("layer %d: media type %q", i, l.MediaType)
		}
		diffID := extractLayer(t, blob(t, layoutDir, l), rootfs, headers)
		if diffID != cfg.RootFS.DiffIDs[i] {
			t.Errorf("layer %d: uncompressed digest %s, config says %s", i, diffID, cfg.RootFS.DiffIDs[i])
		}
	}
	checkFileSystem(t, rootfs, headers)

	// The binaries run from the unpacked image with the image's environment
	// alone: static, and stamped with the version.
	for _, bin := range []string{"flinkmaint-worker", "flinkmaint"} {
		cmd := exec.CommandContext(t.Context(), filepath.Join(rootfs, "usr/local/bin", bin), "--version")
		cmd.Env = cfg.Config.Env
		cmd.Dir = rootfs
		got, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s --version: %v\n%s", bin, err, got)
		} else if !strings.Contains(string(got), bin+" "+version+" ") {
			t.Errorf("%s --version printed %q, want it to name %q", bin, got, bin+" "+version)
		}
	}

	// The same binaries, CA bundle and epoch give the same image, byte for byte.
	again := filepath.Join(out, "again.oci.tar")
	buildDir := filepath.Join(out, "build-"+version)
	rebuild := exec.CommandContext(t.Context(), filepath.Join(root, "bin", "flinkmaint-image"),
		"-worker", filepath.Join(buildDir, "flinkmaint-worker"), "-cli", filepath.Join(buildDir, "flinkmaint"),
		"-version", version, "-out", again)
	rebuild.Env = env
	output, err = rebuild.CombinedOutput()
	if err != nil {
		t.Fatalf("rebuild: %v\n%s", err, output)
	}
	if d := printedDigest(t, output); d != printed {
		t.Errorf("rebuild from the same inputs: digest %s, first build %s", d, printed)
	}
	if a, b := fileDigest(t, tarball), fileDigest(t, again); a != b {
		t.Errorf("rebuild from the same inputs: tarball %s, first build %s", b, a)
	}
	if fi, err := os.Stat(tarball); err == nil {
		t.Logf("image %s: %d bytes, %s", filepath.Base(tarball), fi.Size(), printed)
	}
}

func checkConfig(t *testing.T, cfg imageConfig, version string) {
	t.Helper()
	c := cfg.Config
	if c.User != "65532:65532" {
		t.Errorf("config User = %q, want 65532:65532 (nonroot)", c.User)
	}
	if want := []string{"/usr/local/bin/flinkmaint-worker"}; !reflect.DeepEqual(c.Entrypoint, want) {
		t.Errorf("Entrypoint = %q, want %q", c.Entrypoint, want)
	}
	if want := []string{"--config", "/etc/flinkmaint/worker.yaml"}; !reflect.DeepEqual(c.Cmd, want) {
		t.Errorf("Cmd = %q, want %q", c.Cmd, want)
	}
	if _, ok := c.ExposedPorts["9090/tcp"]; !ok || len(c.ExposedPorts) != 1 {
		t.Errorf("ExposedPorts = %v, want 9090/tcp alone", c.ExposedPorts)
	}
	if !slices.Contains(c.Env, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt") {
		t.Errorf("Env = %q, want SSL_CERT_FILE naming the CA bundle", c.Env)
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.version": version,
		"org.opencontainers.image.title":   "flinkmaint-worker",
		"org.opencontainers.image.source":  "https://github.com/flinkmaint/flinkmaint",
	} {
		if c.Labels[k] != want {
			t.Errorf("label %s = %q, want %q", k, c.Labels[k], want)
		}
	}
	if cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH {
		t.Errorf("config platform %s/%s, want linux/%s", cfg.OS, cfg.Architecture, runtime.GOARCH)
	}
	if !cfg.Created.Equal(time.Unix(sourceDateEpoch, 0)) {
		t.Errorf("config created %s, want SOURCE_DATE_EPOCH %d", cfg.Created, sourceDateEpoch)
	}
}

func checkFileSystem(t *testing.T, rootfs string, headers map[string]*tar.Header) {
	t.Helper()
	for name, h := range headers {
		dir := strings.SplitN(name, "/", 2)[0]
		if dir == "bin" || dir == "sbin" || strings.HasPrefix(name, "usr/bin/") || strings.HasPrefix(name, "usr/sbin/") {
			t.Errorf("image holds %s: no shell or system tools belong in it", name)
		}
		if !h.ModTime.Equal(time.Unix(sourceDateEpoch, 0)) {
			t.Errorf("%s dated %s, want SOURCE_DATE_EPOCH", name, h.ModTime)
		}
	}
	for _, shell := range []string{"bin/sh", "bin/bash", "bin/busybox", "usr/bin/sh", "usr/bin/bash"} {
		if _, err := os.Lstat(filepath.Join(rootfs, shell)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists in the image (%v)", shell, err)
		}
	}
	for _, bin := range []string{"usr/local/bin/flinkmaint-worker", "usr/local/bin/flinkmaint"} {
		h := headers[bin]
		if h == nil || h.Typeflag != tar.TypeReg || h.Mode&0o7777 != 0o755 || h.Uid != 0 {
			t.Errorf("%s: header %+v, want a root-owned file of mode 0755", bin, h)
		}
	}
	if h := headers["tmp"]; h == nil || h.Typeflag != tar.TypeDir || h.Mode&0o7777 != 0o1777 {
		t.Errorf("tmp: header %+v, want a directory of mode 1777", h)
	}
	if h := headers["home/nonroot"]; h == nil || h.Typeflag != tar.TypeDir || h.Uid != 65532 || h.Gid != 65532 {
		t.Errorf("home/nonroot: header %+v, want a directory owned by 65532", h)
	}
	ca, err := os.ReadFile(filepath.Join(rootfs, "etc/ssl/certs/ca-certificates.crt"))
	if err != nil || !bytes.Contains(ca, []byte("-----BEGIN CERTIFICATE-----")) {
		t.Errorf("CA bundle: %d bytes, %v; want certificates", len(ca), err)
	}
	passwd, err := os.ReadFile(filepath.Join(rootfs, "etc/passwd"))
	if err != nil || !slices.Contains(strings.Split(string(passwd), "\n"), "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin") {
		t.Errorf("etc/passwd (%v):\n%s\nwant the nonroot user 65532 with home /home/nonroot", err, passwd)
	}
	group, err := os.ReadFile(filepath.Join(rootfs, "etc/group"))
	if err != nil || !slices.Contains(strings.Split(string(group), "\n"), "nonroot:x:65532:") {
		t.Errorf("etc/group (%v):\n%s\nwant the nonroot group 65532", err, group)
	}
}

func printedDigest(t *testing.T, output []byte) string {
	t.Helper()
	for line := range strings.Lines(string(output)) {
		if d, ok := strings.CutPrefix(strings.TrimSpace(line), "digest: "); ok {
			return d
		}
	}
	t.Fatalf("no digest printed:\n%s", output)
	return ""
}

func readJSON(t *testing.T, file string, v any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// blob reads what a descriptor points to and checks its size and digest.
func blob(t *testing.T, layoutDir string, d descriptor) []byte {
	t.Helper()
	hexDigest, ok := strings.CutPrefix(d.Digest, "sha256:")
	if !ok || strings.ContainsAny(hexDigest, `/\.`) {
		t.Fatalf("descriptor digest %q", d.Digest)
	}
	data, err := os.ReadFile(filepath.Join(layoutDir, "blobs", "sha256", hexDigest))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != hexDigest || int64(len(data)) != d.Size {
		t.Fatalf("blob %s: %d bytes with digest %x, descriptor says %d bytes", d.Digest, len(data), sum, d.Size)
	}
	return data
}

func fileDigest(t *testing.T, file string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("sha256:%x", sha256.Sum256(data))
}

// untar unpacks the OCI layout tarball, which holds only directories and files.
func untar(t *testing.T, file, dir string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		writeEntry(t, dir, h, tr)
	}
}

// extractLayer unpacks one gzipped layer into rootfs, records each entry's
// header by its clean name, and returns the digest of the uncompressed tar.
func extractLayer(t *testing.T, layer []byte, rootfs string, headers map[string]*tar.Header) string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(layer))
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	tr := tar.NewReader(io.TeeReader(zr, h))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("layer: %v", err)
		}
		headers[writeEntry(t, rootfs, hdr, tr)] = hdr
	}
	// The tar reader stops at the end marker; the digest covers the padding after it.
	if _, err := io.Copy(io.Discard, io.TeeReader(zr, h)); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("sha256:%x", h.Sum(nil))
}

// writeEntry creates a directory or regular file under dir; anything else
// (links, devices, whiteouts) has no place in this image.
func writeEntry(t *testing.T, dir string, h *tar.Header, r io.Reader) string {
	t.Helper()
	name := path.Clean(strings.TrimPrefix(h.Name, "./"))
	if !filepath.IsLocal(name) || strings.HasPrefix(path.Base(name), ".wh.") {
		t.Fatalf("tar entry %q", h.Name)
	}
	target := filepath.Join(dir, filepath.FromSlash(name))
	switch h.Typeflag {
	case tar.TypeDir:
		if err := os.MkdirAll(target, 0o755); err != nil {
			t.Fatal(err)
		}
	case tar.TypeReg:
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o755|0o600)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(f, r); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("tar entry %q of type %q: want only directories and files", h.Name, h.Typeflag)
	}
	return name
}
