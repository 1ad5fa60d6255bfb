package freeze

import (
	"strings"
	"testing"
	"time"
)

func mustNew(t *testing.T, p ...Period) *Calendar {
	t.Helper()
	c, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func names(a []Active) string {
	var out []string
	for _, x := range a {
		out = append(out, x.Name)
	}
	return strings.Join(out, ",")
}

func TestSpanCoversWholeLocalDays(t *testing.T) {
	c := mustNew(t, Period{Name: "sales", TimeZone: "America/New_York", From: "2026-11-27", To: "2026-11-30", Reason: "Black Friday"})
	for s, want := range map[string]string{
		"2026-11-27T04:59:00Z": "",      // 23:59 on the 26th in New York
		"2026-11-27T05:00:00Z": "sales", // midnight of the 27th in New York
		"2026-12-01T04:59:00Z": "sales", // 23:59 on the 30th
		"2026-12-01T05:00:00Z": "",
	} {
		if got := names(c.Active(at(s), nil)); got != want {
			t.Errorf("at %s: %q, want %q", s, got, want)
		}
	}
	a := c.Active(at("2026-11-28T12:00:00Z"), nil)[0]
	if !a.Until.Equal(at("2026-12-01T05:00:00Z")) || !strings.Contains(a.String(), "Black Friday") {
		t.Errorf("active %+v (%s); want until the end of the 30th in New York", a, a)
	}
}

func TestWeeklyRecursInItsZoneAcrossMidnightAndDST(t *testing.T) {
	c := mustNew(t,
		Period{Name: "trading", TimeZone: "Europe/London", Weekly: &Weekly{Days: []string{"mon", "tue", "wed", "thu", "fri"}, Start: "08:00", End: "16:30"}},
		Period{Name: "batch", TimeZone: "UTC", Weekly: &Weekly{Days: []string{"Saturday"}, Start: "22:00", End: "02:00"}},
	)
	for s, want := range map[string]string{
		"2026-07-06T07:00:00Z": "trading", // Monday 08:00 BST
		"2026-07-06T06:59:00Z": "",
		"2026-12-07T07:59:00Z": "",        // Monday 07:59 GMT
		"2026-12-07T08:00:00Z": "trading", // Monday 08:00 GMT
		"2026-12-05T08:00:00Z": "",        // Saturday
		"2026-12-05T23:00:00Z": "batch",   // Saturday 23:00
		"2026-12-06T01:59:00Z": "batch",   // past midnight into Sunday
		"2026-12-06T02:00:00Z": "",
		"2026-12-06T23:00:00Z": "", // Sunday night is not Saturday night
	} {
		if got := names(c.Active(at(s), nil)); got != want {
			t.Errorf("at %s: %q, want %q", s, got, want)
		}
	}
	if a := c.Active(at("2026-12-05T23:00:00Z"), nil); len(a) != 1 || !a[0].Until.Equal(at("2026-12-06T02:00:00Z")) {
		t.Errorf("batch freeze %+v; want until Sunday 02:00", a)
	}
}

func TestTenantFreezesCoverOnlyTheirTenants(t *testing.T) {
	c := mustNew(t, Period{Name: "all", From: "2026-01-01", To: "2026-01-02"},
		Period{Name: "trading", Tenants: []string{"team-t"}, From: "2026-01-01", To: "2026-01-02"})
	now := at("2026-01-01T12:00:00Z")
	if got := names(c.Active(now, []string{"team-a"})); got != "all" {
		t.Errorf("team-a: %q; want the global freeze only", got)
	}
	a := c.Active(now, []string{"team-a", "team-t"})
	if names(a) != "all,trading" || strings.Join(a[1].Tenants, ",") != "team-t" {
		t.Errorf("team-a and team-t: %+v; want both, trading naming team-t", a)
	}
	if got := names(c.Active(now, nil)); got != "all,trading" {
		t.Errorf("any tenant: %q; want both", got)
	}
}

func TestFreezeErrorsNameTheField(t *testing.T) {
	_, err := New([]Period{
		{Name: "", From: "2026-01-01", To: "2026-01-02"},
		{Name: "tz", TimeZone: "Mars/Olympus", From: "2026-01-01", To: "2026-01-02"},
		{Name: "order", From: "2026-01-03", To: "2026-01-02"},
		{Name: "both", From: "2026-01-01", Weekly: &Weekly{Days: []string{"mon"}, Start: "09:00", End: "10:00"}},
		{Name: "day", Weekly: &Weekly{Days: []string{"funday"}, Start: "9am", End: "10:00"}},
		{Name: "date", From: "27.11.2026", To: "2026-11-30"},
		{Name: "date"},
	})
	for _, want := range []string{"freezes[0].name is empty", `freezes[1].timeZone="Mars/Olympus"`, "freezes[2]: to (2026-01-02) is not after from",
		"freezes[3]: give from/to or weekly, not both", `freezes[4].weekly.days: "funday"`, `freezes[4].weekly.start="9am"`,
		`freezes[5].from="27.11.2026"`, `freezes[6].name="date": used by another freeze`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("errors %v; want %q", err, want)
		}
	}
}
