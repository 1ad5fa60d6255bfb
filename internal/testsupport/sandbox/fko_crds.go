package sandbox

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// The Flink Kubernetes Operator's API jar on Maven Central carries its
// CRDs (META-INF/fabric8/<name>-v1.yml): a clone without ../shared installs
// them from there, fetched with the Maven the Java sandbox already needs.
const (
	fkoAPIGroup    = "org.apache.flink"
	fkoAPIArtifact = "flink-kubernetes-operator-api"
	fkoAPIVersion  = "1.10.0"
)

// fkoCRDNames are the CRDs the sandbox installs, as the jar names them.
var fkoCRDNames = []string{
	"flinkdeployments.flink.apache.org-v1.yml",
	"flinksessionjobs.flink.apache.org-v1.yml",
	"flinkstatesnapshots.flink.apache.org-v1.yml",
}

// FlinkOperatorCRDDir returns the Flink Kubernetes Operator CRDs the
// sandbox installs: ../shared/fixtures/fko-crds where the reference
// material is beside the repository, else those of the operator's API jar
// from Maven Central, extracted once under var/sandbox.
func FlinkOperatorCRDDir() (string, error) {
	if shared, err := SharedDir(); err == nil {
		return filepath.Join(shared, "fixtures", "fko-crds"), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return MavenFlinkOperatorCRDDir(ctx)
}

// MavenFlinkOperatorCRDDir extracts the CRDs of the operator's API jar
// (fetched into the local Maven repository if it is not there) into
// var/sandbox/fko-crds-<version> and returns that directory.
func MavenFlinkOperatorCRDDir(ctx context.Context) (string, error) {
	state, err := StateDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(state, "fko-crds-"+fkoAPIVersion)
	if complete(dir) {
		return dir, nil
	}
	jar, err := fkoAPIJar(ctx)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(state, 0o755); err != nil {
		return "", fmt.Errorf("sandbox: %w", err)
	}
	tmp, err := os.MkdirTemp(state, "fko-crds-")
	if err != nil {
		return "", fmt.Errorf("sandbox: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := extractCRDs(jar, tmp); err != nil {
		return "", err
	}
	// Another process may have extracted them meanwhile: either copy does.
	if err := os.Rename(tmp, dir); err != nil && !complete(dir) {
		return "", fmt.Errorf("sandbox: place the operator CRDs in %s: %w", dir, err)
	}
	return dir, nil
}

func complete(dir string) bool {
	for _, n := range fkoCRDNames {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			return false
		}
	}
	return true
}

// fkoAPIJar is the API jar in the local Maven repository, fetched with
// mvn dependency:get when missing.
func fkoAPIJar(ctx context.Context) (string, error) {
	repo := os.Getenv("MAVEN_REPO_LOCAL")
	if repo == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("sandbox: local Maven repository: %w", err)
		}
		repo = filepath.Join(home, ".m2", "repository")
	}
	jar := filepath.Join(repo, "org", "apache", "flink", fkoAPIArtifact, fkoAPIVersion, fkoAPIArtifact+"-"+fkoAPIVersion+".jar")
	if _, err := os.Stat(jar); err == nil {
		return jar, nil
	}
	if _, err := exec.LookPath("mvn"); err != nil {
		return "", fmt.Errorf("sandbox: the Flink operator CRDs come from %s:%s:%s on Maven Central, and mvn is not on PATH (Maven 3.8+ and a Java 17 JDK are needed)",
			fkoAPIGroup, fkoAPIArtifact, fkoAPIVersion)
	}
	args := []string{"-B", "-ntp", "-q", "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:get", "-Dtransitive=false",
		"-Dartifact=" + fkoAPIGroup + ":" + fkoAPIArtifact + ":" + fkoAPIVersion}
	if r := os.Getenv("MAVEN_REPO_LOCAL"); r != "" {
		args = append(args, "-Dmaven.repo.local="+r)
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "mvn", args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("sandbox: fetch %s:%s:%s with mvn: %w\n%s", fkoAPIGroup, fkoAPIArtifact, fkoAPIVersion, err, out.String())
	}
	if _, err := os.Stat(jar); err != nil {
		return "", fmt.Errorf("sandbox: mvn fetched %s:%s:%s, yet %s is not there: %w", fkoAPIGroup, fkoAPIArtifact, fkoAPIVersion, jar, err)
	}
	return jar, nil
}

// extractCRDs writes the CRDs of the API jar into dir.
func extractCRDs(jar, dir string) error {
	zr, err := zip.OpenReader(jar)
	if err != nil {
		return fmt.Errorf("sandbox: open %s: %w", jar, err)
	}
	defer zr.Close()
	want := map[string]bool{}
	for _, n := range fkoCRDNames {
		want["META-INF/fabric8/"+n] = true
	}
	found := 0
	for _, f := range zr.File {
		if !want[f.Name] {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return fmt.Errorf("sandbox: %s in %s: %w", f.Name, jar, err)
		}
		data, err := io.ReadAll(io.LimitReader(rc, 16<<20))
		rc.Close()
		if err != nil {
			return fmt.Errorf("sandbox: %s in %s: %w", f.Name, jar, err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f.Name)), data, 0o644); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
		found++
	}
	if found != len(fkoCRDNames) {
		return errors.New("sandbox: " + jar + " lacks some of the CRDs " + fmt.Sprint(fkoCRDNames))
	}
	return nil
}
