package config

import (
	"io"
	"strings"
	"testing"
	"time"
)

func TestCleanupValidation(t *testing.T) {
	for name, tc := range map[string]struct {
		writable []string
		cleanup  Cleanup
		want     string // "" means valid
	}{
		"unset":               {nil, Cleanup{}, ""},
		"under a uri root":    {[]string{"hdfs://nn:8020/flinkmaint"}, Cleanup{TrashRoot: "hdfs://nn:8020/flinkmaint/trash", PlanDir: "hdfs://nn:8020/flinkmaint/plans"}, ""},
		"plain under uri":     {[]string{"hdfs://nn:8020/flinkmaint"}, Cleanup{TrashRoot: "/flinkmaint/trash"}, ""},
		"relative":            {[]string{"/f"}, Cleanup{TrashRoot: "trash"}, `cleanup.trashRoot="trash": use an absolute path`},
		"outside writable":    {[]string{"/flinkmaint"}, Cleanup{PlanDir: "/elsewhere/plans"}, `cleanup.planDir="/elsewhere/plans" is not under any of storage.writableRoots`},
		"sibling prefix":      {[]string{"/flinkmaint"}, Cleanup{TrashRoot: "/flinkmaint-trash"}, "cleanup.trashRoot"},
		"dot dot":             {[]string{"/flinkmaint"}, Cleanup{TrashRoot: "/flinkmaint/../x"}, `must not contain ".."`},
		"audit without trash": {[]string{"/flinkmaint"}, Cleanup{AuditRoot: "/flinkmaint/audit"}, "cleanup.trashRoot is empty"},
		"reference roots":     {nil, Cleanup{ReferenceRoots: []string{"hdfs://ns1:8020/legacy/checkpoints", "/other"}}, ""},
		"relative reference":  {nil, Cleanup{ReferenceRoots: []string{"legacy"}}, `cleanup.referenceRoots[0]="legacy"`},
		"reference root in the trash": {[]string{"/f"}, Cleanup{TrashRoot: "/f/trash", ReferenceRoots: []string{"hdfs://nn/f/trash/legacy"}},
			`cleanup.referenceRoots[0]="hdfs://nn/f/trash/legacy" overlaps cleanup.trashRoot="/f/trash"`},
		"trash in a reference root": {[]string{"/f"}, Cleanup{TrashRoot: "/f/trash", ReferenceRoots: []string{"/f"}},
			`cleanup.referenceRoots[0]="/f" overlaps cleanup.trashRoot`},
		"plan dir in the trash": {[]string{"/f"}, Cleanup{TrashRoot: "/f/trash", PlanDir: "/f/trash/plans"},
			`cleanup.planDir="/f/trash/plans" is inside cleanup.trashRoot="/f/trash"`},
		"audit root is the trash":         {[]string{"/f"}, Cleanup{TrashRoot: "/f/trash", AuditRoot: "/f/trash"}, `cleanup.auditRoot="/f/trash" is inside`},
		"drill root in the trash":         {[]string{"/f"}, Cleanup{TrashRoot: "/f/trash"}, `drill.root="/f/trash/drills" overlaps cleanup.trashRoot`},
		"audit and plans under _ entries": {[]string{"/f"}, Cleanup{TrashRoot: "/f/trash", AuditRoot: "/f/trash/_audit", PlanDir: "hdfs://nn:8020/f/trash/_plans"}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			c := Default()
			c.Storage.WritableRoots = tc.writable
			c.Cleanup = tc.cleanup
			c.Cleanup.FailedRestoreHold = Default().Cleanup.FailedRestoreHold
			if strings.HasPrefix(tc.want, "drill.root") {
				c.Drill.Root = "/f/trash/drills" // the one drill root these cases use
			}
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want one containing %q", err, tc.want)
			}
		})
	}
}

func TestAuthorityAliasesValidation(t *testing.T) {
	for name, tc := range map[string]struct {
		groups [][]string
		want   string
	}{
		"none":             {nil, ""},
		"one group":        {[][]string{{"ns1", "nn1:8020", "10.0.0.1:8020"}}, ""},
		"single name":      {[][]string{{"ns1"}}, "at least two authorities"},
		"scheme given":     {[][]string{{"hdfs://ns1", "nn1:8020"}}, `"hdfs://ns1" is not an authority`},
		"joined by a name": {[][]string{{"ns1", "nn1:8020"}, {"NN1:8020", "ns2"}}, "merge them"},
	} {
		t.Run(name, func(t *testing.T) {
			c := Default()
			c.Storage.AuthorityAliases = tc.groups
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "storage.authorityAliases") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want storage.authorityAliases and %q", err, tc.want)
			}
		})
	}
}

// TestFailedRestoreHold: the hold defaults to 7 days, unset or 0; a
// negative one would let a snapshot a failed job is retried from go as
// soon as its cluster forgets the job, and is refused naming the key.
func TestFailedRestoreHold(t *testing.T) {
	for name, tc := range map[string]struct {
		file string
		want time.Duration
		err  string
	}{
		"unset":    {file: "cleanup: {}\n", want: 7 * 24 * time.Hour},
		"set":      {file: "cleanup:\n  failedRestoreHold: 36h\n", want: 36 * time.Hour},
		"zero":     {file: "cleanup:\n  failedRestoreHold: 0s\n", want: 0}, // loads; the governance activities take the default
		"negative": {file: "cleanup:\n  failedRestoreHold: -1h\n", err: "cleanup.failedRestoreHold=-1h0m0s: use a positive duration"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg, err := Load([]string{"--config", writeFile(t, tc.file)}, envOf(nil), io.Discard)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v; want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || cfg.Cleanup.FailedRestoreHold.D() != tc.want {
				t.Fatalf("hold %v err %v; want %v", cfg.Cleanup.FailedRestoreHold.D(), err, tc.want)
			}
		})
	}
}
