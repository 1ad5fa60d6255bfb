package storage

import (
	"errors"
	"strings"
	"testing"
)

func TestParseURI(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    URI
		wantErr bool
	}{
		"hdfs with port":        {in: "hdfs://NN:8020/a//b/", want: URI{"hdfs", "nn:8020", "/a/b"}},
		"hdfs nameservice":      {in: "hdfs://ns1/flink/ckpt", want: URI{"hdfs", "ns1", "/flink/ckpt"}},
		"hdfs no path":          {in: "hdfs://ns1", want: URI{"hdfs", "ns1", "/"}},
		"hdfs empty authority":  {in: "hdfs:///x", want: URI{"hdfs", "", "/x"}},
		"file triple slash":     {in: "file:///tmp/x", want: URI{"file", "", "/tmp/x"}},
		"file hadoop short":     {in: "file:/tmp/x", want: URI{"file", "", "/tmp/x"}},
		"plain":                 {in: "/tmp/./x", want: URI{"", "", "/tmp/x"}},
		"upper scheme":          {in: "HDFS://ns1/x", want: URI{"hdfs", "ns1", "/x"}},
		"empty":                 {in: "", wantErr: true},
		"relative":              {in: "tmp/x", wantErr: true},
		"dotdot":                {in: "/a/../b", wantErr: true},
		"dotdot in uri":         {in: "hdfs://ns1/a/..", wantErr: true},
		"scheme relative path":  {in: "hdfs:a/b", wantErr: true},
		"windows-ish":           {in: "C:foo", wantErr: true},
		"only dotdot":           {in: "..", wantErr: true},
		"authority then no abs": {in: "hdfs://ns1x", want: URI{"hdfs", "ns1x", "/"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParseURI(tc.in)
			if tc.wantErr {
				if !errors.Is(err, ErrInvalidPath) {
					t.Fatalf("ParseURI(%q) = %v, %v; want ErrInvalidPath", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseURI(%q) = %#v, %v; want %#v", tc.in, got, err, tc.want)
			}
		})
	}
	if s := (URI{"file", "", "/x"}).String(); s != "file:///x" {
		t.Fatalf("file URI renders as %q", s)
	}
}

func TestGuardRefuses(t *testing.T) {
	g, err := NewGuard("hdfs://ns1/tenants/a", "hdfs://ns1/trash", "/local/root")
	if err != nil {
		t.Fatal(err)
	}
	hdfsBase := URI{Scheme: "hdfs", Authority: "ns1"}
	fileBase := URI{Scheme: "file"}
	tests := map[string]struct {
		base   URI
		target string
		reason string
	}{
		"empty":             {hdfsBase, "", "empty path"},
		"relative":          {hdfsBase, "tenants/a/x", "relative path"},
		"dotdot escaping":   {hdfsBase, "/tenants/a/../b/x", `".."`},
		"dotdot staying in": {hdfsBase, "/tenants/a/x/../y", `".."`},
		"root itself":       {hdfsBase, "hdfs://ns1/tenants/a", "is a root itself"},
		"root trailing sl":  {hdfsBase, "/tenants/a/", "is a root itself"},
		"sibling prefix":    {hdfsBase, "/tenants/ab/x", "outside every root"},
		"parent":            {hdfsBase, "/tenants", "outside every root"},
		"other authority":   {hdfsBase, "hdfs://ns2/tenants/a/x", "belongs to hdfs://ns2, this file system is hdfs://ns1"},
		"other scheme":      {hdfsBase, "file:///tenants/a/x", "belongs to file://, this file system is hdfs://ns1"},
		"authority w/ port": {URI{Scheme: "hdfs", Authority: "ns1:8020"}, "/tenants/a/x", "outside every root"},
		"uri w/ port":       {hdfsBase, "hdfs://ns1:8020/tenants/a/x", "belongs to hdfs://ns1:8020, this file system is hdfs://ns1"},
		"fs root":           {hdfsBase, "/", "outside every root"},
		"local outside":     {fileBase, "/etc/passwd", "outside every root"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := g.Check(tc.base, tc.target)
			var oe *OutsideRootsError
			if !errors.Is(err, ErrOutsideRoots) || !errors.As(err, &oe) {
				t.Fatalf("Check(%q) = %v; want ErrOutsideRoots", tc.target, err)
			}
			if !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("error %q does not say %q", err, tc.reason)
			}
			// The message names the path and the roots it was compared to.
			if tc.target != "" && !strings.Contains(err.Error(), tc.target) {
				t.Fatalf("error %q does not name the path", err)
			}
			if !strings.Contains(err.Error(), "tenants/a") {
				t.Fatalf("error %q does not name the roots", err)
			}
		})
	}
}

func TestGuardAllows(t *testing.T) {
	g, err := NewGuard("hdfs://ns1/tenants/a", "/local/root")
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		base   URI
		target string
		want   string
	}{
		"qualified child":   {URI{Scheme: "hdfs", Authority: "ns1"}, "hdfs://NS1/tenants/a/job/chk-1", "hdfs://ns1/tenants/a/job/chk-1"},
		"plain child":       {URI{Scheme: "hdfs", Authority: "ns1"}, "/tenants/a/x//y/", "hdfs://ns1/tenants/a/x/y"},
		"plain local root":  {URI{Scheme: "file"}, "/local/root/x", "file:///local/root/x"},
		"file uri on local": {URI{Scheme: "file"}, "file:///local/root/x", "file:///local/root/x"},
		// A plain root belongs to whichever file system checks against it.
		"plain root on hdfs": {URI{Scheme: "hdfs", Authority: "ns1"}, "/local/root/x", "hdfs://ns1/local/root/x"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := g.Check(tc.base, tc.target)
			if err != nil || got.String() != tc.want {
				t.Fatalf("Check(%q) = %v, %v; want %s", tc.target, got, err, tc.want)
			}
		})
	}
}

func TestGuardWithoutRootsRefusesEverything(t *testing.T) {
	var nilGuard *Guard
	empty, _ := NewGuard()
	for name, g := range map[string]*Guard{"nil": nilGuard, "empty": empty} {
		t.Run(name, func(t *testing.T) {
			_, err := g.Check(URI{Scheme: "file"}, "/any/path")
			if !errors.Is(err, ErrOutsideRoots) || !strings.Contains(err.Error(), "no roots configured") {
				t.Fatalf("got %v", err)
			}
		})
	}
}

func TestNewGuardRejectsBadRoots(t *testing.T) {
	for name, root := range map[string]string{
		"fs root":  "/",
		"hdfs /":   "hdfs://ns1/",
		"relative": "a/b",
		"dotdot":   "/a/../b",
		"empty":    "",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := NewGuard(root); !errors.Is(err, ErrInvalidPath) {
				t.Fatalf("NewGuard(%q) = %v; want ErrInvalidPath", root, err)
			}
		})
	}
}

func TestErrorKinds(t *testing.T) {
	if !errors.Is(ErrNamespaceQuotaExceeded, ErrQuotaExceeded) || !errors.Is(ErrSpaceQuotaExceeded, ErrQuotaExceeded) {
		t.Fatal("quota kinds must match ErrQuotaExceeded")
	}
	if errors.Is(ErrQuotaExceeded, ErrNamespaceQuotaExceeded) || errors.Is(ErrNamespaceQuotaExceeded, ErrSpaceQuotaExceeded) {
		t.Fatal("quota kinds must not match each other")
	}
	err := newError("stat", "/x", ErrNotFound, errors.New("cause"))
	if !errors.Is(err, ErrNotFound) || errors.Is(err, ErrPermission) {
		t.Fatalf("kind not matched: %v", err)
	}
	if IsRetryable(err) || !IsRetryable(newError("stat", "/x", ErrUnavailable, nil)) {
		t.Fatal("IsRetryable wrong")
	}
}

// A guard shared by several file systems (the Resolver's: one HDFS client
// per namenode and the local disk) binds its plain roots to the default file
// system, so "/data/x" grants hdfs://nn1:8020/data/x and nothing on any
// other namenode or on the local disk.
func TestGuardOnBindsPlainRoots(t *testing.T) {
	g, err := NewGuardOn("hdfs://NN1:8020/", "/data/x", "file:///local/y")
	if err != nil {
		t.Fatal(err)
	}
	nn1 := URI{Scheme: "hdfs", Authority: "nn1:8020"}
	other := URI{Scheme: "hdfs", Authority: "other:8020"}
	local := URI{Scheme: "file"}
	allows := map[string]struct {
		base   URI
		target string
		want   string
	}{
		"qualified on default fs": {nn1, "hdfs://nn1:8020/data/x/y", "hdfs://nn1:8020/data/x/y"},
		"plain on default fs":     {nn1, "/data/x/y", "hdfs://nn1:8020/data/x/y"},
		"qualified root on local": {local, "/local/y/z", "file:///local/y/z"},
	}
	for name, tc := range allows {
		t.Run("allows/"+name, func(t *testing.T) {
			got, err := g.Check(tc.base, tc.target)
			if err != nil || got.String() != tc.want {
				t.Fatalf("Check(%s, %q) = %v, %v; want %s", tc.base, tc.target, got, err, tc.want)
			}
		})
	}
	refuses := map[string]struct {
		base    URI
		target  string
		reasons []string
	}{
		"same path, other namenode":  {other, "hdfs://other:8020/data/x/y", []string{"hdfs://other:8020 match no root"}},
		"plain path, other namenode": {other, "/data/x/y", []string{"hdfs://other:8020 match no root"}},
		"same path, local disk":      {local, "/data/x/y", []string{"outside every root"}},
		"file uri, local disk":       {local, "file:///data/x/y", []string{"outside every root"}},
		"target names another fs":    {nn1, "hdfs://other:8020/data/x/y", []string{"belongs to hdfs://other:8020", "this file system is hdfs://nn1:8020"}},
		"target names local fs":      {nn1, "file:///data/x/y", []string{"belongs to file://", "this file system is hdfs://nn1:8020"}},
		"local target on hdfs":       {local, "hdfs://nn1:8020/data/x/y", []string{"belongs to hdfs://nn1:8020", "this file system is file://"}},
	}
	for name, tc := range refuses {
		t.Run("refuses/"+name, func(t *testing.T) {
			_, err := g.Check(tc.base, tc.target)
			if !errors.Is(err, ErrOutsideRoots) {
				t.Fatalf("Check(%s, %q) = %v; want ErrOutsideRoots", tc.base, tc.target, err)
			}
			for _, r := range tc.reasons {
				if !strings.Contains(err.Error(), r) {
					t.Fatalf("error %q does not say %q", err, r)
				}
			}
			if !strings.Contains(err.Error(), "hdfs://nn1:8020/data/x") {
				t.Fatalf("error %q does not name the bound root", err)
			}
		})
	}
	if got := strings.Join(g.Roots(), " "); got != "hdfs://nn1:8020/data/x file:///local/y" {
		t.Fatalf("Roots() = %s", got)
	}
}

func TestNewGuardOnRejectsBadDefaultFS(t *testing.T) {
	for name, def := range map[string]string{
		"empty":                 "",
		"plain path":            "/data",
		"hdfs without namenode": "hdfs:///",
		"unsupported scheme":    "s3://bucket/",
		"other machine":         "file://otherhost/",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := NewGuardOn(def, "/data/x"); !errors.Is(err, ErrInvalidPath) || !strings.Contains(err.Error(), "default file system") {
				t.Fatalf("NewGuardOn(%q) = %v; want ErrInvalidPath naming the default file system", def, err)
			}
		})
	}
	g, err := NewGuardOn("file://localhost/", "/data/x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Check(URI{Scheme: "file"}, "/data/x/y"); err != nil {
		t.Fatalf("file://localhost is this machine: %v", err)
	}
}
