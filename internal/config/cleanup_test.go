package config

import (
	"strings"
	"testing"
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
	} {
		t.Run(name, func(t *testing.T) {
			c := Default()
			c.Storage.WritableRoots = tc.writable
			c.Cleanup = tc.cleanup
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
