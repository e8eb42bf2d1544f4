//go:build linux

package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"regexp/syntax"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/jail-sandbox/jail/confine"
	"golang.org/x/sys/unix"
)

// maxGlobResults caps glob's list; the count of the rest is reported.
const maxGlobResults = 1000

func globTool() *Tool {
	return &Tool{
		Name:        "glob",
		Description: "Find files by glob pattern (** matches any depth), newest first. path is the directory the pattern is relative to.",
		Schema: `{"type":"object","additionalProperties":false,"required":["pattern"],"properties":{
"pattern":{"type":"string","minLength":1,"description":"e.g. **/*.go or src/*.{ts,tsx}"},
"path":{"type":"string","description":"directory to search, default the workspace root"}}}`,
		Capabilities: []string{"fs.read"},
		OutputCap:    50000,
		run: func(ctx context.Context, x *execCtx, raw json.RawMessage) Result {
			a, err := decode[struct{ Pattern, Path string }](raw)
			if err != nil {
				return errorf("%v", err)
			}
			if !doublestar.ValidatePattern(a.Pattern) {
				return errorf("argument /pattern: %q is not a valid glob pattern", a.Pattern)
			}
			base, err := x.ws.Rel(a.Path)
			if err != nil {
				return errorf("%v", err)
			}
			base = path.Clean(base)
			pat := strings.TrimPrefix(a.Pattern, "./")
			type hit struct {
				rel   string
				mtime int64
			}
			var mu sync.Mutex
			var hits []hit
			err = x.ws.walkTree(ctx, base, walkOptions{hidden: true}, func(rel string) {
				sub := rel
				if base != "." {
					sub = strings.TrimPrefix(rel, base+"/")
				}
				if ok, _ := doublestar.Match(pat, sub); !ok {
					return
				}
				var st unix.Stat_t
				fd, err := Resolve(x.ws.fd, rel, unix.O_PATH|unix.O_NOFOLLOW, 0)
				if err != nil {
					return
				}
				unix.Fstat(fd, &st)
				unix.Close(fd)
				mu.Lock()
				hits = append(hits, hit{rel, st.Mtim.Nano()})
				mu.Unlock()
			})
			if err != nil {
				return errorf("%v", err)
			}
			sort.Slice(hits, func(i, j int) bool {
				if hits[i].mtime != hits[j].mtime {
					return hits[i].mtime > hits[j].mtime
				}
				return hits[i].rel < hits[j].rel
			})
			out := &confine.Capture{Limit: x.outputCap}
			for _, h := range hits[:min(len(hits), maxGlobResults)] {
				fmt.Fprintln(out, h.rel)
			}
			if len(hits) > maxGlobResults {
				fmt.Fprintf(out, "... [%d more files not listed]\n", len(hits)-maxGlobResults)
			}
			if len(hits) == 0 {
				fmt.Fprintln(out, "no files match")
			}
			return Result{Content: out.String(), Meta: map[string]any{"matches": len(hits), "truncated": len(hits) > maxGlobResults}}
		},
	}
}

// fileTypes are grep's type filters: a name and the globs it stands for,
// after ripgrep's most used ones.
func fileTypes() map[string][]string {
	return map[string][]string{
		"go": {"*.go"}, "py": {"*.py", "*.pyi"}, "js": {"*.js", "*.mjs", "*.cjs", "*.jsx"},
		"ts": {"*.ts", "*.tsx", "*.mts", "*.cts"}, "rust": {"*.rs"}, "c": {"*.c", "*.h"},
		"cpp": {"*.cpp", "*.cc", "*.cxx", "*.hpp", "*.hh", "*.h"}, "java": {"*.java"},
		"rb": {"*.rb"}, "sh": {"*.sh", "*.bash"}, "md": {"*.md", "*.markdown"},
		"json": {"*.json"}, "yaml": {"*.yaml", "*.yml"}, "toml": {"*.toml"},
		"html": {"*.html", "*.htm"}, "css": {"*.css", "*.scss"}, "sql": {"*.sql"},
	}
}

// grepArgs are grep's arguments.
type grepArgs struct {
	Pattern    string
	Path       string
	Glob       string
	Type       string
	IgnoreCase bool   `json:"ignore_case"`
	OutputMode string `json:"output_mode"`
	Context    int
	Before     int
	After      int
	Hidden     bool
	MaxResults int `json:"max_results"`
}

// defaultGrepResults caps lines (content), files or counts reported.
const defaultGrepResults = 1000

// maxGrepFileBytes: larger files are skipped, not searched; they are
// almost always data, and reading them whole would cost the memory.
const maxGrepFileBytes = 64 << 20

func grepTool() *Tool {
	types := make([]string, 0, len(fileTypes()))
	for t := range fileTypes() {
		types = append(types, strconv.Quote(t))
	}
	sort.Strings(types)
	return &Tool{
		Name:        "grep",
		Description: "Search file contents with a regular expression (RE2). Honours .gitignore, skips binary files. output_mode: content, files_with_matches or count.",
		Schema: `{"type":"object","additionalProperties":false,"required":["pattern"],"properties":{
"pattern":{"type":"string","minLength":1,"description":"RE2 regular expression"},
"path":{"type":"string","description":"file or directory, default the workspace root"},
"glob":{"type":"string","description":"only files matching, e.g. *.go or src/**/*.ts"},
"type":{"enum":[` + strings.Join(types, ",") + `]},
"ignore_case":{"type":"boolean"},
"output_mode":{"enum":["content","files_with_matches","count"]},
"context":{"type":"integer","minimum":0,"maximum":50},
"before":{"type":"integer","minimum":0,"maximum":50},
"after":{"type":"integer","minimum":0,"maximum":50},
"hidden":{"type":"boolean","description":"search dot files too"},
"max_results":{"type":"integer","minimum":1}}}`,
		Capabilities: []string{"fs.read"},
		OutputCap:    50000,
		run: func(ctx context.Context, x *execCtx, raw json.RawMessage) Result {
			a, err := decode[grepArgs](raw)
			if err != nil {
				return errorf("%v", err)
			}
			return x.ws.grep(ctx, a, x.outputCap)
		},
	}
}

// fileHits is one file's part of grep's answer.
type fileHits struct {
	rel   string
	count int
	text  string // content mode: the formatted lines
	lines int
}

func (w *Workspace) grep(ctx context.Context, a grepArgs, outputCap int) Result {
	expr := a.Pattern
	if a.IgnoreCase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile("(?m)" + expr)
	if err != nil {
		return errorf("argument /pattern: %v", err)
	}
	// A literal every match must contain is looked for first with
	// bytes.Index (on an ASCII-lowered copy for case-insensitive ones),
	// which beats the regexp engine by far; only files holding it are
	// matched with the regexp.
	literal, fold := requiredLiteral("(?m)" + expr)
	mode := a.OutputMode
	if mode == "" {
		mode = "content"
	}
	before, after := max(a.Before, a.Context), max(a.After, a.Context)
	limit := a.MaxResults
	if limit == 0 {
		limit = defaultGrepResults
	}
	var globs []string
	if a.Glob != "" {
		if !doublestar.ValidatePattern(a.Glob) {
			return errorf("argument /glob: %q is not a valid glob pattern", a.Glob)
		}
		globs = append(globs, a.Glob)
	}
	var typeGlobs []string
	if a.Type != "" {
		typeGlobs = fileTypes()[a.Type]
	}
	matchGlob := func(g, rel string) bool {
		if strings.Contains(g, "/") {
			ok, _ := doublestar.Match(g, rel)
			return ok
		}
		ok, _ := doublestar.Match(g, path.Base(rel))
		return ok
	}
	var (
		mu      sync.Mutex
		results []fileHits
		bufs    = sync.Pool{New: func() any { return &scratch{file: make([]byte, 0, 64<<10)} }}
	)
	err = w.walkTree(ctx, a.Path, walkOptions{gitignore: true, hidden: a.Hidden}, func(rel string) {
		for _, g := range globs {
			if !matchGlob(g, rel) {
				return
			}
		}
		if len(typeGlobs) > 0 && !slicesAny(typeGlobs, func(g string) bool { return matchGlob(g, rel) }) {
			return
		}
		bp := bufs.Get().(*scratch)
		defer bufs.Put(bp)
		b, ok := w.slurp(rel, &bp.file)
		if !ok || isBinary(b) {
			return
		}
		if literal != nil && !containsLiteral(b, literal, fold, bp) {
			return
		}
		if !re.Match(b) {
			return
		}
		h := fileHits{rel: rel}
		switch mode {
		case "files_with_matches":
			h.count = 1
		case "count":
			h.count = len(matchedLines(re, b))
		default:
			h.text, h.count, h.lines = formatMatches(rel, re, b, before, after)
		}
		mu.Lock()
		results = append(results, h)
		mu.Unlock()
	})
	if err != nil {
		return errorf("%v", err)
	}
	sort.Slice(results, func(i, j int) bool { return results[i].rel < results[j].rel })
	out := &confine.Capture{Limit: outputCap}
	shown, total := 0, 0
	for _, h := range results {
		switch mode {
		case "files_with_matches":
			total++
			if shown < limit {
				fmt.Fprintln(out, h.rel)
				shown++
			}
		case "count":
			total++
			if shown < limit {
				fmt.Fprintf(out, "%s:%d\n", h.rel, h.count)
				shown++
			}
		default:
			total += h.count
			if shown < limit {
				if shown > 0 && (before > 0 || after > 0) {
					fmt.Fprintln(out, "--")
				}
				out.Write([]byte(h.text))
				shown += h.lines
			}
		}
	}
	matches := 0
	for _, h := range results {
		matches += h.count
	}
	if len(results) == 0 {
		fmt.Fprintln(out, "no matches")
	} else if shown >= limit && (mode == "content" && total > shown || mode != "content" && total > shown) {
		fmt.Fprintf(out, "... [results cut at max_results=%d]\n", limit)
	}
	return Result{Content: out.String(), Meta: map[string]any{"files": len(results), "matches": matches}}
}

func slicesAny(s []string, f func(string) bool) bool {
	for _, v := range s {
		if f(v) {
			return true
		}
	}
	return false
}

// slurp reads one regular file whole into *bp (grown as needed). Files
// that vanished, are unreadable or too large are skipped.
func (w *Workspace) slurp(rel string, bp *[]byte) ([]byte, bool) {
	// Regular files only, opened without blocking: a FIFO or device
	// would hold the worker (ResolveRegular).
	fd, err := ResolveRegular(w.fd, rel, unix.O_NOFOLLOW|unix.O_NOATIME)
	if err == unix.EPERM {
		// O_NOATIME is refused on files we do not own.
		fd, err = ResolveRegular(w.fd, rel, unix.O_NOFOLLOW)
	}
	if err != nil {
		return nil, false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size > maxGrepFileBytes {
		return nil, false
	}
	b := (*bp)[:0]
	if int64(cap(b)) < st.Size+1 {
		b = make([]byte, 0, st.Size+1)
	}
	for {
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, false
		}
		b = b[:len(b)+n]
		if n == 0 || len(b) > maxGrepFileBytes {
			break
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
	*bp = b
	return b, true
}

// matchedLines returns the start offsets of the lines holding a match,
// each once.
func matchedLines(re *regexp.Regexp, b []byte) []int {
	var starts []int
	last := -1
	for _, m := range re.FindAllIndex(b, -1) {
		s := bytes.LastIndexByte(b[:m[0]], '\n') + 1
		if s != last {
			starts = append(starts, s)
			last = s
		}
	}
	return starts
}

// formatMatches renders a file's matching lines as "path:N:text" and
// context lines as "path-N-text", with "--" between separate groups, as
// grep and ripgrep do.
func formatMatches(rel string, re *regexp.Regexp, b []byte, before, after int) (string, int, int) {
	starts := matchedLines(re, b)
	// Line starts of the whole file, only for files that match.
	lineStarts := []int{0}
	for i, c := range b {
		if c == '\n' && i+1 < len(b) {
			lineStarts = append(lineStarts, i+1)
		}
	}
	idx := func(off int) int { return sort.SearchInts(lineStarts, off+1) - 1 }
	matched := map[int]bool{}
	for _, s := range starts {
		matched[idx(s)] = true
	}
	var sb strings.Builder
	lines, prev := 0, -2
	for _, s := range starts {
		n := idx(s)
		from, to := max(0, n-before), min(len(lineStarts)-1, n+after)
		if from <= prev {
			from = prev + 1
		} else if prev >= 0 {
			sb.WriteString("--\n")
		}
		for l := from; l <= to; l++ {
			end := len(b)
			if l+1 < len(lineStarts) {
				end = lineStarts[l+1] - 1
			}
			text := strings.TrimSuffix(string(b[lineStarts[l]:end]), "\r")
			text = strings.TrimSuffix(text, "\n")
			if len(text) > maxLineChars {
				text = text[:maxLineChars] + fmt.Sprintf("... [%d chars truncated]", len(text)-maxLineChars)
			}
			sep := "-"
			if matched[l] {
				sep = ":"
			}
			fmt.Fprintf(&sb, "%s%s%d%s%s\n", rel, sep, l+1, sep, strings.ToValidUTF8(text, "\uFFFD"))
			lines++
		}
		if to > prev {
			prev = to
		}
	}
	return sb.String(), len(starts), lines
}

// scratch is one grep goroutine's buffers: the file, and its lowered copy
// for case-insensitive literals.
type scratch struct{ file, lower []byte }

// requiredLiteral finds the longest literal that every match of expr must
// contain (a literal, or a literal part of a top-level concatenation), and
// whether it is case-folded. It returns nil when there is none, or when a
// folded literal is not ASCII (Unicode folding is left to the regexp).
func requiredLiteral(expr string) ([]byte, bool) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, false
	}
	re = re.Simplify()
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	var best *syntax.Regexp
	consider := func(r *syntax.Regexp) {
		if r.Op == syntax.OpLiteral && (best == nil || len(r.Rune) > len(best.Rune)) {
			best = r
		}
	}
	consider(re)
	if re.Op == syntax.OpConcat {
		for _, sub := range re.Sub {
			consider(sub)
		}
	}
	if best == nil || len(best.Rune) < 3 {
		return nil, false
	}
	fold := best.Flags&syntax.FoldCase != 0
	lit := []byte(string(best.Rune))
	if fold {
		for _, c := range lit {
			if c >= utf8.RuneSelf {
				return nil, false
			}
		}
		lit = bytes.ToLower(lit)
	}
	return lit, fold
}

// containsLiteral reports whether b holds lit, comparing ASCII letters
// without case when fold is set.
func containsLiteral(b, lit []byte, fold bool, sc *scratch) bool {
	if !fold {
		return bytes.Contains(b, lit)
	}
	if cap(sc.lower) < len(b) {
		sc.lower = make([]byte, len(b))
	}
	low := sc.lower[:len(b)]
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		low[i] = c
	}
	return bytes.Contains(low, lit)
}
