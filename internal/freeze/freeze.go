// Package freeze holds the blackout periods in which flinkmaint starts no
// maintenance: dates (a change freeze over a sales weekend) and weekly
// recurrences (trading hours), each in its own time zone, for every
// tenant or for some.
package freeze

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Period is one named freeze. Either From/To (a span of dates and times)
// or Weekly (a recurring span on days of the week) is set.
type Period struct {
	// Name names the freeze in refusals and overrides.
	Name string `yaml:"name" json:"name"`
	// Tenants it applies to; empty means every tenant.
	Tenants []string `yaml:"tenants,omitempty" json:"tenants,omitempty"`
	// TimeZone is an IANA name (Europe/Berlin); default UTC.
	TimeZone string `yaml:"timeZone,omitempty" json:"timeZone,omitempty"`
	// From and To are local date-times, "2026-11-27 00:00" or a date
	// "2026-11-27" (From at 00:00, To to the end of that day).
	From string `yaml:"from,omitempty" json:"from,omitempty"`
	// To ends the period (see from); a bare date covers that whole day.
	To string `yaml:"to,omitempty" json:"to,omitempty"`
	// Weekly recurs on Days (mon..sun) from Start to End local time
	// ("09:00", "17:30"); End before Start runs past midnight.
	Weekly *Weekly `yaml:"weekly,omitempty" json:"weekly,omitempty"`
	// Reason is shown to whoever is refused.
	Reason string `yaml:"reason,omitempty" json:"reason,omitempty"`
}

// Weekly is a recurring freeze.
type Weekly struct {
	// Days it recurs on: mon, tue, wed, thu, fri, sat, sun.
	Days []string `yaml:"days" json:"days"`
	// Start is the local time it begins, HH:MM.
	Start string `yaml:"start" json:"start"`
	// End is the local time it ends, HH:MM; before Start, it runs past
	// midnight.
	End string `yaml:"end" json:"end"`
}

// Active is a freeze in force.
type Active struct {
	Name    string    `json:"name"`
	Tenants []string  `json:"tenants,omitempty"` // the tenants asked about that it covers; empty: all
	Until   time.Time `json:"until"`
	Reason  string    `json:"reason,omitempty"`
}

// String says what is frozen until when.
func (a Active) String() string {
	s := fmt.Sprintf("freeze %q until %s", a.Name, a.Until.UTC().Format(time.RFC3339))
	if len(a.Tenants) > 0 {
		s += " for " + strings.Join(a.Tenants, ", ")
	}
	if a.Reason != "" {
		s += " (" + a.Reason + ")"
	}
	return s
}

var weekdays = map[string]time.Weekday{"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday}

// Calendar is the freezes of a worker.
type Calendar struct {
	periods []period
}

type period struct {
	Period
	loc      *time.Location
	from, to time.Time // span
	days     map[time.Weekday]bool
	start    time.Duration // weekly, since midnight
	end      time.Duration
}

// New checks the periods and returns their calendar; errors name the
// field, the value and what would be valid.
func New(periods []Period) (*Calendar, error) {
	c := &Calendar{}
	var errs []error
	names := map[string]bool{}
	for i, p := range periods {
		field := fmt.Sprintf("freezes[%d]", i)
		bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(field+format, args...)) }
		if strings.TrimSpace(p.Name) == "" {
			bad(".name is empty: name the freeze (it is shown to whoever it stops)")
		} else if names[p.Name] {
			bad(".name=%q: used by another freeze", p.Name)
		}
		names[p.Name] = true
		tz := p.TimeZone
		if tz == "" {
			tz = "UTC"
		}
		loc, err := time.LoadLocation(tz)
		if err != nil {
			bad(".timeZone=%q: use an IANA time zone such as Europe/Berlin or America/New_York", p.TimeZone)
			continue
		}
		q := period{Period: p, loc: loc}
		switch {
		case p.Weekly != nil && (p.From != "" || p.To != ""):
			bad(": give from/to or weekly, not both")
			continue
		case p.Weekly != nil:
			q.days = map[time.Weekday]bool{}
			for _, d := range p.Weekly.Days {
				wd, ok := weekdays[strings.ToLower(strings.TrimSpace(d))[:min(3, len(strings.TrimSpace(d)))]]
				if !ok {
					bad(".weekly.days: %q is not a day; use mon, tue, wed, thu, fri, sat, sun", d)
					continue
				}
				q.days[wd] = true
			}
			if len(p.Weekly.Days) == 0 {
				bad(".weekly.days is empty: list the days it recurs on, e.g. [mon, tue, wed, thu, fri]")
			}
			var ok1, ok2 bool
			q.start, ok1 = clock(p.Weekly.Start)
			q.end, ok2 = clock(p.Weekly.End)
			if !ok1 {
				bad(".weekly.start=%q: use HH:MM (24h), e.g. 09:00", p.Weekly.Start)
			}
			if !ok2 {
				bad(".weekly.end=%q: use HH:MM (24h), e.g. 17:30", p.Weekly.End)
			}
			if ok1 && ok2 && q.start == q.end {
				bad(".weekly: start and end are both %s; a freeze needs a length", p.Weekly.Start)
			}
		default:
			var ok1, ok2 bool
			q.from, ok1 = localTime(p.From, loc, false)
			q.to, ok2 = localTime(p.To, loc, true)
			if !ok1 {
				bad(".from=%q: use a local date or date-time, e.g. 2026-11-27 or 2026-11-27 18:00", p.From)
			}
			if !ok2 {
				bad(".to=%q: use a local date or date-time, e.g. 2026-11-30 or 2026-11-30 23:59", p.To)
			}
			if ok1 && ok2 && !q.to.After(q.from) {
				bad(": to (%s) is not after from (%s)", p.To, p.From)
			}
		}
		c.periods = append(c.periods, q)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

func clock(s string) (time.Duration, bool) {
	t, err := time.Parse("15:04", strings.TrimSpace(s))
	if err != nil {
		return 0, false
	}
	return time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute, true
}

// localTime parses a local date or date-time; a bare date as the end of a
// span means the end of that day.
func localTime(s string, loc *time.Location, end bool) (time.Time, bool) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{"2006-01-02 15:04", "2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02 15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, true
		}
	}
	t, err := time.ParseInLocation("2006-01-02", s, loc)
	if err != nil {
		return time.Time{}, false
	}
	if end {
		t = t.AddDate(0, 0, 1) // through the whole day
	}
	return t, true
}

// Active returns the freezes in force at `at` that cover any of tenants
// (every tenant-wide freeze covers all; no tenants means "any tenant"),
// in name order.
func (c *Calendar) Active(at time.Time, tenants []string) []Active {
	if c == nil {
		return nil
	}
	var out []Active
	for _, p := range c.periods {
		var covered []string
		if len(p.Tenants) > 0 {
			for _, t := range tenants {
				if slices.Contains(p.Tenants, t) {
					covered = append(covered, t)
				}
			}
			if len(covered) == 0 && len(tenants) > 0 {
				continue
			}
			if len(tenants) == 0 {
				covered = p.Tenants
			}
		}
		until, ok := p.activeAt(at)
		if !ok {
			continue
		}
		out = append(out, Active{Name: p.Name, Tenants: covered, Until: until, Reason: p.Reason})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// activeAt says whether the period covers at, and until when.
func (p period) activeAt(at time.Time) (time.Time, bool) {
	if p.days == nil {
		return p.to, !at.Before(p.from) && at.Before(p.to)
	}
	local := at.In(p.loc)
	// The span that may cover at started today or, past midnight,
	// yesterday (local days).
	for back := 0; back <= 1; back++ {
		day := time.Date(local.Year(), local.Month(), local.Day()-back, 0, 0, 0, 0, p.loc)
		if !p.days[day.Weekday()] {
			continue
		}
		start := day.Add(p.start)
		end := day.Add(p.end)
		if p.end <= p.start {
			end = day.AddDate(0, 0, 1).Add(p.end)
		}
		// Wall-clock times across a DST change: rebuild them in the zone.
		start = time.Date(start.Year(), start.Month(), start.Day(), int(p.start/time.Hour), int(p.start%time.Hour/time.Minute), 0, 0, p.loc)
		end = time.Date(end.Year(), end.Month(), end.Day(), int(p.end/time.Hour), int(p.end%time.Hour/time.Minute), 0, 0, p.loc)
		if !at.Before(start) && at.Before(end) {
			return end, true
		}
	}
	return time.Time{}, false
}
