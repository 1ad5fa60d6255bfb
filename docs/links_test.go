// Package docs_test keeps the documentation linked: every relative link of
// README.md and of the pages under docs/ names a file or directory that
// exists, every #anchor names a heading of the page it points into, and
// every page under docs/ is linked from README.md or from another page.
// The package has test files only.
package docs_test

import (
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is the module root: go test runs in docs/.
const repoRoot = ".."

// page is one markdown file: its path from the repository root, slash
// separated, and its text.
type page struct {
	name string
	text string
}

// link is one relative link of a page.
type link struct {
	from   string // page that holds it
	line   int
	target string // as written
}

// pages returns README.md and every .md file under docs/.
func pages(t *testing.T) []page {
	t.Helper()
	names := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".md") {
			rel, err := filepath.Rel(repoRoot, p)
			if err != nil {
				return err
			}
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []page
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(n)))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page{name: n, text: string(b)})
	}
	return out
}

var (
	// fenceRe opens or closes a fenced code block (up to three spaces of
	// indentation in CommonMark; list items indent further, so any is
	// taken).
	fenceRe = regexp.MustCompile("^\\s*(`{3,}|~{3,})")
	// inlineLinkRe is [text](target) or [text](target "title"); images too.
	inlineLinkRe = regexp.MustCompile(`\[[^\[\]]*\]\(\s*<?([^()\s<>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// refDefRe is a reference definition, [label]: target.
	refDefRe = regexp.MustCompile(`(?m)^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
	// schemeRe starts an absolute URL.
	schemeRe = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	// atxRe is an ATX heading; the closing #s are optional.
	atxRe = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	// setextRe underlines a setext heading.
	setextRe = regexp.MustCompile(`^ {0,3}(=+|-+)[ \t]*$`)
	// htmlAnchorRe is an explicit anchor: <a name="x"> or id="x".
	htmlAnchorRe = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	// mdLinkTextRe is a link inside heading text: only its text is shown.
	mdLinkTextRe = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// maskCode returns text with fenced code blocks and inline code spans
// replaced by spaces, newlines kept, so offsets and line numbers still
// match the original and nothing inside code reads as a link or heading.
func maskCode(text string) string {
	lines := strings.SplitAfter(text, "\n")
	var out strings.Builder
	var fence string // the open fence's marker, "" outside
	var para []string
	flush := func() {
		out.WriteString(maskInline(strings.Join(para, "")))
		para = para[:0]
	}
	for _, l := range lines {
		if fence != "" {
			if m := fenceRe.FindStringSubmatch(l); m != nil && m[1][0] == fence[0] && len(m[1]) >= len(fence) &&
				strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), string(fence[0]))) == "" {
				fence = ""
			}
			out.WriteString(blank(l))
			continue
		}
		if m := fenceRe.FindStringSubmatch(l); m != nil {
			flush()
			fence = m[1]
			out.WriteString(blank(l))
			continue
		}
		if strings.TrimSpace(l) == "" {
			flush()
			out.WriteString(l)
			continue
		}
		para = append(para, l)
	}
	flush()
	return out.String()
}

// maskInline blanks the code spans of one paragraph: a run of n backticks
// opens a span closed by the next run of exactly n; a run with no match is
// literal text.
func maskInline(p string) string {
	b := []byte(p)
	run := func(i int) int {
		j := i
		for j < len(b) && b[j] == '`' {
			j++
		}
		return j - i
	}
	for i := 0; i < len(b); {
		if b[i] != '`' {
			i++
			continue
		}
		n := run(i)
		end := -1
		for j := i + n; j < len(b); {
			if b[j] != '`' {
				j++
				continue
			}
			m := run(j)
			if m == n {
				end = j + m
				break
			}
			j += m
		}
		if end < 0 {
			i += n
			continue
		}
		for k := i; k < end; k++ {
			if b[k] != '\n' {
				b[k] = ' '
			}
		}
		i = end
	}
	return string(b)
}

func blank(l string) string {
	if strings.HasSuffix(l, "\n") {
		return strings.Repeat(" ", len(l)-1) + "\n"
	}
	return strings.Repeat(" ", len(l))
}

// links returns every link of p whose target is not an absolute URL
// (http, https, mailto); other schemes are returned and fail the check.
func links(p page) []link {
	masked := maskCode(p.text)
	lineOf := func(off int) int { return strings.Count(masked[:off], "\n") + 1 }
	var out []link
	add := func(target string, off int) {
		lower := strings.ToLower(target)
		if strings.HasPrefix(lower, "http://") || strings.HasPrefix(lower, "https://") || strings.HasPrefix(lower, "mailto:") {
			return
		}
		out = append(out, link{from: p.name, line: lineOf(off), target: target})
	}
	for _, m := range inlineLinkRe.FindAllStringSubmatchIndex(masked, -1) {
		add(masked[m[2]:m[3]], m[2])
	}
	for _, m := range refDefRe.FindAllStringSubmatchIndex(masked, -1) {
		add(masked[m[2]:m[3]], m[2])
	}
	sort.Slice(out, func(i, j int) bool { return out[i].line < out[j].line })
	return out
}

// headingText renders heading source as the text GitHub derives an anchor
// from: links become their text, code and emphasis markers go.
func headingText(s string) string {
	s = mdLinkTextRe.ReplaceAllString(s, "$1")
	return strings.NewReplacer("`", "", "*", "").Replace(s)
}

// anchor is GitHub's anchor of a heading: lower case; every character that
// is not a letter, digit, space, hyphen or underscore removed; each space
// a hyphen.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(headingText(heading))) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the anchors of a page's headings, duplicates numbered as
// GitHub numbers them (x, x-1, x-2), and explicit HTML anchors.
func anchors(text string) map[string]bool {
	// Headings are read from the source, so code in a heading counts;
	// a line the mask blanked is inside a fenced block.
	masked := strings.Split(maskCode(text), "\n")
	lines := strings.Split(text, "\n")
	seen := map[string]int{}
	out := map[string]bool{}
	addHeading := func(h string) {
		a := anchor(h)
		n := seen[a]
		seen[a] = n + 1
		if n > 0 {
			a = fmt.Sprintf("%s-%d", a, n)
		}
		out[a] = true
	}
	for i, l := range lines {
		if strings.TrimSpace(masked[i]) == "" {
			continue
		}
		if m := atxRe.FindStringSubmatch(l); m != nil {
			addHeading(m[2])
			continue
		}
		// A setext underline turns the paragraph line above it into a
		// heading (a lone "---" after a blank line is a thematic break).
		if i > 0 && setextRe.MatchString(l) && strings.TrimSpace(masked[i-1]) != "" {
			prev := lines[i-1]
			if strings.TrimSpace(prev) != "" && !atxRe.MatchString(prev) && !strings.Contains(prev, "|") &&
				!strings.HasPrefix(strings.TrimSpace(prev), "- ") && !strings.HasPrefix(strings.TrimSpace(prev), "* ") {
				addHeading(prev)
			}
		}
	}
	for _, m := range htmlAnchorRe.FindAllStringSubmatch(text, -1) {
		out[m[1]] = true
	}
	return out
}

// resolve turns a link target into the repository path it names (slash
// separated, from the root) and its anchor.
func resolve(from, target string) (file, frag string, err error) {
	file, frag, _ = strings.Cut(target, "#")
	if file == "" {
		return from, frag, nil
	}
	if schemeRe.MatchString(file) {
		return "", "", fmt.Errorf("not a relative path, nor an http(s) or mailto URL")
	}
	if q := strings.IndexByte(file, '?'); q >= 0 {
		file = file[:q]
	}
	unescaped, err := url.PathUnescape(file)
	if err != nil {
		return "", "", fmt.Errorf("bad escape: %v", err)
	}
	if strings.HasPrefix(unescaped, "/") {
		file = path.Clean(strings.TrimPrefix(unescaped, "/"))
	} else {
		file = path.Clean(path.Join(path.Dir(from), unescaped))
	}
	if file == ".." || strings.HasPrefix(file, "../") {
		return "", "", fmt.Errorf("leaves the repository")
	}
	return file, frag, nil
}

// TestDocLinksResolve: every relative link names an existing file or
// directory, and every anchor a heading of the page it points into.
func TestDocLinksResolve(t *testing.T) {
	ps := pages(t)
	texts := map[string]string{}
	for _, p := range ps {
		texts[p.name] = p.text
	}
	anchorCache := map[string]map[string]bool{}
	anchorsOf := func(file string) (map[string]bool, error) {
		if a, ok := anchorCache[file]; ok {
			return a, nil
		}
		text, ok := texts[file]
		if !ok {
			b, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(file)))
			if err != nil {
				return nil, err
			}
			text = string(b)
		}
		a := anchors(text)
		anchorCache[file] = a
		return a, nil
	}
	var broken []string
	checked := 0
	for _, p := range ps {
		for _, l := range links(p) {
			checked++
			bad := func(format string, args ...any) {
				broken = append(broken, fmt.Sprintf("%s:%d: (%s): %s", l.from, l.line, l.target, fmt.Sprintf(format, args...)))
			}
			file, frag, err := resolve(p.name, l.target)
			if err != nil {
				bad("%v", err)
				continue
			}
			st, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(file)))
			if err != nil {
				bad("%s does not exist", file)
				continue
			}
			if frag == "" {
				continue
			}
			if st.IsDir() || !strings.HasSuffix(file, ".md") {
				bad("an anchor into %s, which is no markdown page", file)
				continue
			}
			a, err := anchorsOf(file)
			if err != nil {
				bad("%v", err)
				continue
			}
			if !a[frag] {
				bad("%s has no heading with anchor #%s", file, frag)
			}
		}
	}
	if checked == 0 {
		t.Fatal("found no relative link at all: the link reader is broken")
	}
	if len(broken) > 0 {
		t.Errorf("%d broken link(s):\n%s", len(broken), strings.Join(broken, "\n"))
	}
}

// TestNoOrphanPages: every page under docs/ is linked from README.md or
// from another page.
func TestNoOrphanPages(t *testing.T) {
	ps := pages(t)
	linked := map[string]bool{}
	for _, p := range ps {
		for _, l := range links(p) {
			file, _, err := resolve(p.name, l.target)
			if err == nil && file != p.name {
				linked[file] = true
			}
		}
	}
	var orphans []string
	for _, p := range ps {
		if p.name != "README.md" && !linked[p.name] {
			orphans = append(orphans, p.name)
		}
	}
	if len(orphans) > 0 {
		t.Errorf("pages linked from neither README.md nor another page: %s", strings.Join(orphans, ", "))
	}
}

func TestAnchor(t *testing.T) {
	for heading, want := range map[string]string{
		"Monitoring": "monitoring",
		"On-call: notifications, freezes and the tenant lock": "on-call-notifications-freezes-and-the-tenant-lock",
		"Flink 2.x":                "flink-2x",
		"`FlinkmaintQuotaWarning`": "flinkmaintquotawarning",
		"Putting things back: `governance restore`": "putting-things-back-governance-restore",
		"How long the tests take":                   "how-long-the-tests-take",
		"snake_case and [a link](x.md)":             "snake_case-and-a-link",
		"Ünïcode — dash":                            "ünïcode--dash",
	} {
		if got := anchor(heading); got != want {
			t.Errorf("anchor(%q) = %q, want %q", heading, got, want)
		}
	}
	a := anchors("# A\n\n## A\n\n```\n# A\n```\n\nB\n---\n\n### `A`\n")
	for _, want := range []string{"a", "a-1", "a-2", "b"} {
		if !a[want] {
			t.Errorf("anchors: no %q in %v", want, a)
		}
	}
	if a["a-3"] {
		t.Errorf("anchors: a heading inside a code block counted: %v", a)
	}
}

func TestLinksSkipCode(t *testing.T) {
	p := page{name: "docs/x.md", text: "see [a](a.md) and `[b](b.md)`\n\n```md\n[c](c.md)\n```\n\n" +
		"a span `over\n[d](d.md) two lines` and [e](e.md#f \"title\"), [w](https://example.com), ``[g](g.md)``\n\n[ref]: ref.md\n"}
	var got []string
	for _, l := range links(p) {
		got = append(got, fmt.Sprintf("%d:%s", l.line, l.target))
	}
	if want := "1:a.md 8:e.md#f 10:ref.md"; strings.Join(got, " ") != want {
		t.Errorf("links = %q, want %q", strings.Join(got, " "), want)
	}
}
