// Command image builds the worker's container image without a Docker
// engine or a base image: one layer, from scratch, holding the two static
// binaries, the build machine's CA bundle, /etc/passwd and /etc/group with
// the nonroot user 65532, /tmp and /home/nonroot. It writes an OCI image
// layout packed into one tar file (what `skopeo copy oci-archive:...` reads)
// and prints the file, the tag and the image digest.
//
// The same inputs give the same digest: every entry is sorted, owned by a
// fixed user and dated SOURCE_DATE_EPOCH (Unix 0 when unset).
//
// Usage: image -worker FILE -cli FILE -version V -out FILE [-ca-bundle FILE] [-arch GOARCH]
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	repository = "flinkmaint-worker"
	source     = "https://github.com/flinkmaint/flinkmaint"
	caPath     = "etc/ssl/certs/ca-certificates.crt"
	nonroot    = 65532
)

// A tag is what a registry accepts after the colon.
var tagRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// elfMachine is the ELF machine each GOARCH builds for, to refuse a binary
// that would not run on the platform the image claims.
var elfMachine = map[string]elf.Machine{
	"amd64":   elf.EM_X86_64,
	"arm64":   elf.EM_AARCH64,
	"386":     elf.EM_386,
	"arm":     elf.EM_ARM,
	"ppc64le": elf.EM_PPC64,
	"s390x":   elf.EM_S390,
	"riscv64": elf.EM_RISCV,
}

func main() {
	worker := flag.String("worker", "", "static flinkmaint-worker binary (required)")
	cli := flag.String("cli", "", "static flinkmaint binary (required)")
	version := flag.String("version", "", "release, also the image tag (required)")
	out := flag.String("out", "", "OCI layout tar file to write (required)")
	caBundle := flag.String("ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "CA bundle copied into the image (Debian's ca-certificates)")
	arch := flag.String("arch", runtime.GOARCH, "GOARCH the binaries were built for")
	flag.Parse()
	if *worker == "" || *cli == "" || *version == "" || *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: image -worker FILE -cli FILE -version V -out FILE [-ca-bundle FILE] [-arch GOARCH]")
		os.Exit(2)
	}
	digest, err := build(options{worker: *worker, cli: *cli, version: *version, out: *out, caBundle: *caBundle, arch: *arch})
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Printf("image: %s\ntag: %s:%s\ndigest: %s\n", *out, repository, *version, digest)
}

type options struct {
	worker, cli, version, out, caBundle, arch string
}

func build(o options) (v1.Hash, error) {
	if !tagRE.MatchString(o.version) {
		return v1.Hash{}, fmt.Errorf("version %q is not a valid image tag (letters, digits, _ . -; at most 128)", o.version)
	}
	epoch, err := sourceDateEpoch()
	if err != nil {
		return v1.Hash{}, err
	}
	files := map[string][]byte{}
	for name, path := range map[string]string{"usr/local/bin/flinkmaint-worker": o.worker, "usr/local/bin/flinkmaint": o.cli} {
		if err := checkStatic(path, o.arch); err != nil {
			return v1.Hash{}, err
		}
		if files[name], err = os.ReadFile(path); err != nil {
			return v1.Hash{}, err
		}
	}
	ca, err := os.ReadFile(o.caBundle)
	if errors.Is(err, fs.ErrNotExist) {
		return v1.Hash{}, fmt.Errorf("CA bundle %s is missing: install Debian's ca-certificates package or pass -ca-bundle", o.caBundle)
	} else if err != nil {
		return v1.Hash{}, err
	}
	if len(bytes.TrimSpace(ca)) == 0 {
		return v1.Hash{}, fmt.Errorf("CA bundle %s is empty", o.caBundle)
	}
	files[caPath] = ca

	layerTar, err := rootfs(files, epoch)
	if err != nil {
		return v1.Hash{}, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.DefaultCompression), tarball.WithCompressedCaching)
	if err != nil {
		return v1.Hash{}, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "flinkmaint tools/image", Comment: "flinkmaint binaries, CA bundle, nonroot user"},
	})
	if err != nil {
		return v1.Hash{}, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return v1.Hash{}, err
	}
	cf = cf.DeepCopy()
	cf.Created = v1.Time{Time: epoch}
	cf.OS, cf.Architecture = "linux", o.arch
	cf.Config = v1.Config{
		User:         fmt.Sprintf("%d:%d", nonroot, nonroot),
		Entrypoint:   []string{"/usr/local/bin/flinkmaint-worker"},
		Cmd:          []string{"--config", "/etc/flinkmaint/worker.yaml"},
		ExposedPorts: map[string]struct{}{"9090/tcp": {}},
		Env: []string{
			"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			"SSL_CERT_FILE=/" + caPath,
		},
		Labels: map[string]string{
			"org.opencontainers.image.version": o.version,
			"org.opencontainers.image.title":   repository,
			"org.opencontainers.image.source":  source,
		},
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return v1.Hash{}, err
	}
	digest, err := img.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	return digest, writeArchive(img, o, epoch)
}

// sourceDateEpoch is the time every entry and the config carry.
func sourceDateEpoch() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want seconds since 1970", s)
	}
	return time.Unix(n, 0).UTC(), nil
}

// checkStatic refuses a binary a scratch image cannot run: another
// architecture, or one that needs a dynamic loader the image lacks.
func checkStatic(path, arch string) error {
	want, ok := elfMachine[arch]
	if !ok {
		return fmt.Errorf("-arch %q: not one of the architectures this tool knows", arch)
	}
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s: not a Linux ELF binary: %w", path, err)
	}
	defer f.Close()
	if f.Machine != want {
		return fmt.Errorf("%s is built for %s, not %s", path, f.Machine, arch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked: build it with CGO_ENABLED=0", path)
		}
	}
	return nil
}

// rootfs is the uncompressed layer: files, the directories above them,
// passwd and group, /tmp and the nonroot home, sorted by name.
func rootfs(files map[string][]byte, mtime time.Time) ([]byte, error) {
	type entry struct {
		hdr  tar.Header
		data []byte
	}
	entries := map[string]entry{}
	var addDirs func(name string)
	addDirs = func(name string) {
		dir := filepath.ToSlash(filepath.Dir(name))
		if dir == "." {
			return
		}
		if _, ok := entries[dir+"/"]; !ok {
			entries[dir+"/"] = entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755}}
		}
		addDirs(dir)
	}
	addFile := func(name string, mode int64, data []byte) {
		entries[name] = entry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data))}, data: data}
		addDirs(name)
	}
	for name, data := range files {
		mode := int64(0o644)
		if strings.HasPrefix(name, "usr/local/bin/") {
			mode = 0o755
		}
		addFile(name, mode, data)
	}
	addFile("etc/passwd", 0o644, []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", nonroot, nonroot)))
	addFile("etc/group", 0o644, []byte(fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", nonroot)))
	// Go's resolver reads it: hosts files first, as in distroless.
	addFile("etc/nsswitch.conf", 0o644, []byte("hosts: files dns\n"))
	entries["tmp/"] = entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777}}
	entries["home/"] = entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "home/", Mode: 0o755}}
	entries["home/nonroot/"] = entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "home/nonroot/", Mode: 0o700, Uid: nonroot, Gid: nonroot, Uname: "nonroot", Gname: "nonroot"}}

	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		e := entries[n]
		e.hdr.ModTime = mtime
		if e.hdr.Uid == 0 {
			e.hdr.Uname, e.hdr.Gname = "root", "root"
		}
		if err := tw.WriteHeader(&e.hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeArchive writes the image as an OCI layout in a scratch directory
// beside out and packs it into out, replacing out only when complete.
func writeArchive(img v1.Image, o options, mtime time.Time) error {
	dir := filepath.Dir(o.out)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	scratch, err := os.MkdirTemp(dir, ".oci-layout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	p, err := layout.Write(scratch, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendImage(img,
		layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": repository + ":" + o.version}),
		layout.WithPlatform(v1.Platform{OS: "linux", Architecture: o.arch}),
	); err != nil {
		return err
	}
	tmp := o.out + ".tmp"
	if err := packDir(scratch, tmp, mtime); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, o.out)
}

// packDir tars dir's tree with sorted names and fixed owners and times.
func packDir(dir, out string, mtime time.Time) error {
	var names []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		names = append(names, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(names)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	for _, n := range names {
		path := filepath.Join(dir, filepath.FromSlash(n))
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: n, Mode: 0o644, ModTime: mtime, Uname: "root", Gname: "root"}
		if fi.IsDir() {
			hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, n+"/", 0o755
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			continue
		}
		hdr.Typeflag, hdr.Size = tar.TypeReg, fi.Size()
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		src, err := os.Open(path)
		if err != nil {
			return err
		}
		_, err = io.Copy(tw, src)
		src.Close()
		if err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}
