package cleanup

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func codecListing() Listing {
	f := newFixture()
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	f.job("a1", t0)
	shared := f.state("a1", "shared", "s1", 100, t0)
	f.state("a1", "taskowned", "t1", 10, t0)
	f.chk("a1", 7, true, t0, shared)
	f.chk("a1", 8, false, t0)
	f.savepoint("a1b2c3", "0123456789ab", true, t0)
	f.l.Metadata[ckRoot+"/a1/chk-6/_metadata"] = MetadataResult{Error: "unknown format version 9"}
	f.l.PinMarkers = []string{spRoot + "/savepoint-a1b2c3-0123456789ab"}
	return f.l
}

// A listing comes back as it was written, in the line form and in the
// earlier single-value form.
func TestListingRoundTrip(t *testing.T) {
	l := codecListing()
	var buf bytes.Buffer
	if err := WriteListing(&buf, l); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(buf.String(), "\n"); lines != 1+len(l.StateFiles)+len(l.Metadata) {
		t.Fatalf("%d lines; want a header, one per state file and one per _metadata", lines)
	}
	got, err := ReadListing(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, l) {
		t.Fatalf("read back\n%+v\nwant\n%+v", got, l)
	}
	whole, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	got, err = ReadListing(bytes.NewReader(whole))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, l) {
		t.Fatalf("earlier form read back\n%+v\nwant\n%+v", got, l)
	}
	var again bytes.Buffer
	if err := WriteListing(&again, got); err != nil {
		t.Fatal(err)
	}
	var first bytes.Buffer
	_ = WriteListing(&first, l)
	if !bytes.Equal(first.Bytes(), again.Bytes()) {
		t.Fatal("the same listing written twice differs")
	}
}

// A listing cut short, with a line too many, of another format or with a
// _metadata twice is refused: a plan from it could miss a referrer.
func TestListingRefusesDamage(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteListing(&buf, codecListing()); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	lines := strings.SplitAfter(text, "\n")
	lines = lines[:len(lines)-1] // the empty tail after the last newline
	dupMeta := strings.Join(lines, "") + lines[len(lines)-1]
	dupMeta = strings.Replace(dupMeta, `"metadataLines":3`, `"metadataLines":4`, 1)
	for name, in := range map[string]string{
		"cut short":       strings.Join(lines[:len(lines)-1], ""),
		"a line too many": text + lines[len(lines)-1],
		"other format":    strings.Replace(text, ListingFormat, "flinkmaint-listing-lines/2", 1),
		"metadata twice":  dupMeta,
		"no header":       "",
		"entries in the header": strings.Replace(text, `"format":"`+ListingFormat+`"`,
			`"format":"`+ListingFormat+`","metadata":{}`, 1),
	} {
		_, err := ReadListing(strings.NewReader(in))
		if err == nil {
			t.Errorf("%s: read without error", name)
			continue
		}
		t.Logf("%s: %v", name, err)
	}
}
