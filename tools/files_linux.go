//go:build linux

package tools

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jail-sandbox/jail/confine"
	"github.com/jail-sandbox/jail/policy"
	"golang.org/x/sys/unix"
)

// execCtx is what a tool's code gets inside the worker.
type execCtx struct {
	ws        *Workspace
	outputCap int
	// session is the bash session's state: read before a bash call, and
	// updated by it.
	session *Session
	// timeout bounds the call (bash enforces it itself, killing the tree).
	timeout time.Duration
	// bash makes the process's bash calls one at a time: when a call ends,
	// every process reparented to this one (a subreaper) is that call's.
	bash *sync.Mutex
}

// Session is the state a bash session carries between calls: the working
// directory and the exported environment at the end of the last call.
type Session struct {
	Cwd string   `json:"cwd,omitempty"`
	Env []string `json:"env,omitempty"`
	// base is the environment the sandbox started the shell with and
	// writable the view of the sandbox the state came from: what the
	// gate judges the next command's state against (policy.Shell). Not
	// sent to workers.
	base     []string
	writable func(dir string) bool
}

// Shell is the state as the gate judges a command run in it; nil before
// the first call.
func (s *Session) Shell() *policy.Shell {
	if s == nil || s.Cwd == "" {
		return nil
	}
	return &policy.Shell{Cwd: s.Cwd, Env: s.Env, Base: s.base, Writable: s.writable}
}

// Limits of the file tools, chosen for a model's context rather than the
// machine: a model cannot use a 50 MB answer.
const (
	// maxReadBytes is the largest file read reads whole; larger files must
	// be read in ranges (offset/limit) or searched with grep.
	maxReadBytes = 32 << 20
	// defaultReadLines is read's limit when the caller names none.
	defaultReadLines = 2000
	// maxLineChars cuts single lines (minified files) so one line cannot
	// take the whole output cap.
	maxLineChars = 2000
	// binarySniff is how much of a file is searched for a NUL byte, the
	// heuristic git and ripgrep use for "binary".
	binarySniff = 8000
	// maxListEntries caps ls.
	maxListEntries = 1000
)

func decode[T any](args json.RawMessage) (T, error) {
	var v T
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	err := json.Unmarshal(args, &v)
	return v, err
}

// isBinary is git's and ripgrep's heuristic: a NUL byte near the start.
func isBinary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), binarySniff)], 0) >= 0
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// readAll reads a whole regular file opened through Resolve, refusing
// directories and anything larger than limit.
func readAll(f *os.File, p string, limit int64) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	switch {
	case st.IsDir():
		return nil, fmt.Errorf("%s is a directory (use ls)", p)
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file (%s)", p, st.Mode().Type())
	case st.Size() > limit:
		return nil, fmt.Errorf("%s is %d bytes, over the %d-byte limit of this tool: read a range with offset and limit, or search it with grep", p, st.Size(), limit)
	}
	b := make([]byte, 0, st.Size()+1)
	for {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if len(b) == cap(b) {
			if int64(len(b)) > limit {
				return nil, fmt.Errorf("%s grew over the %d-byte limit while being read", p, limit)
			}
			b = append(b, 0)[:len(b)]
		}
	}
}

// readHint keeps the familiar advice for a directory given to a reading
// tool.
func readHint(err error, p string) error {
	if errors.Is(err, ErrNotRegular) && strings.Contains(err.Error(), "a directory") {
		return fmt.Errorf("%s is a directory (use ls)", p)
	}
	return err
}

func readTool() *Tool {
	return &Tool{
		Name:        "read",
		Description: "Read a text file in the workspace with line numbers. offset is the first line (1-based), limit the number of lines (default 2000).",
		Schema: `{"type":"object","additionalProperties":false,"required":["path"],"properties":{
"path":{"type":"string","minLength":1,"description":"file path, relative to the workspace or absolute inside it"},
"offset":{"type":"integer","minimum":1,"description":"first line to show, 1-based"},
"limit":{"type":"integer","minimum":1,"description":"number of lines to show"}}}`,
		Risk:         0,
		Capabilities: []string{"fs.read"},
		OutputCap:    100000,
		run: func(ctx context.Context, x *execCtx, raw json.RawMessage) Result {
			a, err := decode[struct {
				Path          string
				Offset, Limit int
			}](raw)
			if err != nil {
				return errorf("%v", err)
			}
			f, err := x.ws.OpenRegular(a.Path)
			if err != nil {
				return errorf("%v", readHint(err, a.Path))
			}
			defer f.Close()
			if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > maxReadBytes && (a.Offset > 0 || a.Limit > 0) {
				return readRange(f, a.Path, a.Offset, a.Limit, x.outputCap)
			}
			b, err := readAll(f, a.Path, maxReadBytes)
			if err != nil {
				return errorf("%v", err)
			}
			if isBinary(b) {
				return errorf("%s is a binary file (%d bytes); read shows text only", a.Path, len(b))
			}
			return Result{Content: numberLines(bytes.NewReader(b), a.Offset, a.Limit, x.outputCap), Meta: readMeta(a.Path, b, a.Offset, a.Limit)}
		},
	}
}

// readRange serves a range of a file too large to read whole; it has no
// sha256, so such a file cannot be edited with expected_sha256.
func readRange(f *os.File, p string, offset, limit, outputCap int) Result {
	head := make([]byte, binarySniff)
	n, _ := io.ReadFull(f, head)
	if isBinary(head[:n]) {
		return errorf("%s is a binary file; read shows text only", p)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return errorf("%s: %v", p, err)
	}
	return Result{Content: numberLines(bufio.NewReaderSize(f, 1<<16), offset, limit, outputCap), Meta: map[string]any{"path": p, "first_line": max(offset, 1)}}
}

// numberLines formats lines [offset, offset+limit) as cat -n does, cutting
// long lines and the whole at outputCap characters. Invalid UTF-8 becomes
// U+FFFD, so the content is always valid JSON text.
func numberLines(r io.ByteReader, offset, limit, outputCap int) string {
	if offset < 1 {
		offset = 1
	}
	if limit < 1 {
		limit = defaultReadLines
	}
	out := &confine.Capture{Limit: outputCap}
	line := 0
	var l []byte
	for line < offset+limit-1 {
		l = l[:0]
		eof := false
		for {
			c, err := r.ReadByte()
			if err != nil {
				eof = true
				break
			}
			if c == '\n' {
				break
			}
			// Skipped lines are not kept; kept ones are cut at a bound.
			if line+1 >= offset && len(l) < 4*maxLineChars+4 {
				l = append(l, c)
			}
		}
		if eof && len(l) == 0 {
			break
		}
		line++
		if line < offset {
			continue
		}
		l = bytes.TrimSuffix(l, []byte("\r"))
		s := string(l)
		if !utf8.ValidString(s) {
			s = strings.ToValidUTF8(s, "\uFFFD")
		}
		if n := utf8.RuneCountInString(s); n > maxLineChars {
			s = string([]rune(s)[:maxLineChars]) + fmt.Sprintf("... [%d chars truncated]", n-maxLineChars)
		}
		fmt.Fprintf(out, "%6d\t%s\n", line, s)
		if eof {
			break
		}
	}
	return out.String()
}

func readMeta(p string, b []byte, offset, limit int) map[string]any {
	total := bytes.Count(b, []byte("\n"))
	if len(b) > 0 && b[len(b)-1] != '\n' {
		total++
	}
	if offset < 1 {
		offset = 1
	}
	if limit < 1 {
		limit = defaultReadLines
	}
	last := min(total, offset+limit-1)
	m := map[string]any{"path": p, "total_lines": total, "first_line": offset, "last_line": last, "bytes": len(b), "sha256": sha(b)}
	if !utf8.Valid(b) {
		m["invalid_utf8"] = true
	}
	if last < total {
		m["more"] = true
	}
	return m
}

// replaceFile writes data to p atomically: a temporary file in the same
// directory, fsync, rename over p, fsync of the directory. An existing
// file's permission bits are kept. Both names are single components of a
// directory resolved beneath the workspace, so the rename cannot land
// outside it.
// sameGitCode refuses a write whose name is not one of git's config or
// hooks (policy.GitCodePath) while the directory it resolved to, through
// a symlink of the workspace (g -> .git), makes it one: the gate judged
// the name, and git would run what lands there. The directory is the
// descriptor the write goes through, so the answer is about the file
// written, not about a name that could be swapped after.
func (w *Workspace) sameGitCode(p string, dfd int, base string) error {
	rel, err := w.Rel(p)
	if err != nil || policy.GitCodePath(filepath.Clean(rel)) {
		return nil
	}
	root, err1 := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", w.fd))
	dir, err2 := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", dfd))
	if err1 != nil || err2 != nil {
		return fmt.Errorf("jail: %s: cannot tell where the write would land (%v): nothing was written", p, errors.Join(err1, err2))
	}
	real, err := filepath.Rel(root, filepath.Join(dir, base))
	if err != nil || strings.HasPrefix(real, "..") {
		return fmt.Errorf("jail: %s resolves outside the workspace: nothing was written", p)
	}
	if policy.GitCodePath(real) {
		return fmt.Errorf("jail: %s leads through a symlink to %s, a file git reads as config or runs as a hook: the gate judged the name, so nothing was written; write it by its own name (%s), which is asked about", p, real, real)
	}
	return nil
}

func (w *Workspace) replaceFile(p string, data []byte, mkdirs bool) (created bool, err error) {
	dir, base, err := w.dirAndBase(p, mkdirs)
	if err != nil {
		return false, err
	}
	defer dir.Close()
	dfd := int(dir.Fd())
	if err := w.sameGitCode(p, dfd, base); err != nil {
		return false, err
	}
	mode := uint32(0o666) // before umask
	keep := false
	var st unix.Stat_t
	switch err := unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case errors.Is(err, unix.ENOENT):
		created = true
	case err != nil:
		return false, w.explain(p, err)
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		target, _ := readlinkat(dfd, base)
		return false, fmt.Errorf("%s is a symlink to %s: write to the file it points to", p, target)
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return false, fmt.Errorf("%s exists and is not a regular file", p)
	default:
		mode, keep = st.Mode&0o7777, true
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	tmp := "." + base + ".jail-" + hex.EncodeToString(rnd[:]) + ".tmp"
	fd, err := Resolve(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, mode)
	if err != nil {
		return false, w.explain(p, err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	fail := func(err error) (bool, error) {
		f.Close()
		unix.Unlinkat(dfd, tmp, 0)
		return false, w.explain(p, err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if keep {
		// The umask applied at creation; the replaced file's bits win.
		if err := f.Chmod(os.FileMode(mode&0o777) | unixModeBits(mode)); err != nil {
			return fail(err)
		}
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		unix.Unlinkat(dfd, tmp, 0)
		return false, w.explain(p, err)
	}
	if err := unix.Renameat(dfd, tmp, dfd, base); err != nil {
		unix.Unlinkat(dfd, tmp, 0)
		return false, w.explain(p, err)
	}
	// The rename is durable once the directory is: O_PATH cannot fsync.
	if d, err := Resolve(dfd, ".", unix.O_RDONLY|unix.O_DIRECTORY, 0); err == nil {
		unix.Fsync(d)
		unix.Close(d)
	}
	return created, nil
}

func unixModeBits(m uint32) os.FileMode {
	var fm os.FileMode
	if m&unix.S_ISUID != 0 {
		fm |= os.ModeSetuid
	}
	if m&unix.S_ISGID != 0 {
		fm |= os.ModeSetgid
	}
	if m&unix.S_ISVTX != 0 {
		fm |= os.ModeSticky
	}
	return fm
}

func readlinkat(dfd int, name string) (string, error) {
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(dfd, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

func writeTool() *Tool {
	return &Tool{
		Name:        "write",
		Description: "Create or replace a file in the workspace atomically with the given content; parent directories are created.",
		Schema: `{"type":"object","additionalProperties":false,"required":["path","content"],"properties":{
"path":{"type":"string","minLength":1},
"content":{"type":"string"}}}`,
		Risk:         1,
		Capabilities: []string{"fs.write"},
		OutputCap:    2000,
		run: func(ctx context.Context, x *execCtx, raw json.RawMessage) Result {
			a, err := decode[struct{ Path, Content string }](raw)
			if err != nil {
				return errorf("%v", err)
			}
			created, err := x.ws.replaceFile(a.Path, []byte(a.Content), true)
			if err != nil {
				return errorf("%v", err)
			}
			verb := "replaced"
			if created {
				verb = "created"
			}
			return Result{Content: fmt.Sprintf("%s %s (%d bytes)", verb, a.Path, len(a.Content)),
				Meta: map[string]any{"path": a.Path, "bytes": len(a.Content), "created": created, "sha256": sha([]byte(a.Content))}}
		},
	}
}

func editTool() *Tool {
	return &Tool{
		Name:        "edit",
		Description: "Replace old_string with new_string in a file. It must match exactly once unless replace_all; expected_sha256 refuses if the file changed since read.",
		Schema: `{"type":"object","additionalProperties":false,"required":["path","old_string","new_string"],"properties":{
"path":{"type":"string","minLength":1},
"old_string":{"type":"string","minLength":1},
"new_string":{"type":"string"},
"replace_all":{"type":"boolean"},
"expected_sha256":{"type":"string","pattern":"^[0-9a-f]{64}$","description":"meta.sha256 from the read this edit is based on"}}}`,
		Risk:         1,
		Capabilities: []string{"fs.read", "fs.write"},
		OutputCap:    2000,
		run: func(ctx context.Context, x *execCtx, raw json.RawMessage) Result {
			a, err := decode[struct {
				Path           string
				OldString      string `json:"old_string"`
				NewString      string `json:"new_string"`
				ReplaceAll     bool   `json:"replace_all"`
				ExpectedSHA256 string `json:"expected_sha256"`
			}](raw)
			if err != nil {
				return errorf("%v", err)
			}
			f, err := x.ws.OpenRegular(a.Path)
			if err != nil {
				return errorf("%v", readHint(err, a.Path))
			}
			b, err := readAll(f, a.Path, maxReadBytes)
			f.Close()
			if err != nil {
				return errorf("%v", err)
			}
			if isBinary(b) {
				return errorf("%s is a binary file; edit changes text files only", a.Path)
			}
			if a.ExpectedSHA256 != "" && sha(b) != a.ExpectedSHA256 {
				return errorf("%s changed since it was read (sha256 %s, expected %s): read it again; nothing was changed", a.Path, sha(b), a.ExpectedSHA256)
			}
			if a.OldString == a.NewString {
				return errorf("old_string and new_string are the same; nothing to change")
			}
			n := bytes.Count(b, []byte(a.OldString))
			switch {
			case n == 0:
				return Result{IsError: true, Content: fmt.Sprintf("old_string not found in %s; nothing was changed", a.Path), Meta: map[string]any{"matches": 0}}
			case n > 1 && !a.ReplaceAll:
				return Result{IsError: true, Content: fmt.Sprintf("old_string matches %d times in %s; add surrounding context to make it unique, or set replace_all; nothing was changed", n, a.Path), Meta: map[string]any{"matches": n}}
			}
			nb := bytes.Replace(b, []byte(a.OldString), []byte(a.NewString), -1)
			if _, err := x.ws.replaceFile(a.Path, nb, false); err != nil {
				return errorf("%v", err)
			}
			return Result{Content: fmt.Sprintf("replaced %d occurrence(s) in %s", n, a.Path),
				Meta: map[string]any{"path": a.Path, "matches": n, "sha256": sha(nb)}}
		},
	}
}

func lsTool() *Tool {
	return &Tool{
		Name:        "ls",
		Description: "List a workspace directory: type, size and name of each entry, directories first.",
		Schema: `{"type":"object","additionalProperties":false,"properties":{
"path":{"type":"string","description":"directory, default the workspace root"},
"all":{"type":"boolean","description":"include names starting with a dot"}}}`,
		Capabilities: []string{"fs.read"},
		OutputCap:    50000,
		run: func(ctx context.Context, x *execCtx, raw json.RawMessage) Result {
			a, err := decode[struct {
				Path string
				All  bool
			}](raw)
			if err != nil {
				return errorf("%v", err)
			}
			if a.Path == "" {
				a.Path = "."
			}
			d, err := x.ws.Open(a.Path, unix.O_RDONLY|unix.O_DIRECTORY, 0)
			if err != nil {
				return errorf("%v", err)
			}
			defer d.Close()
			ents, err := d.ReadDir(-1)
			if err != nil {
				return errorf("%s: %v", a.Path, err)
			}
			type row struct {
				name, kind string
				size       int64
				dir        bool
			}
			var rows []row
			for _, e := range ents {
				if !a.All && strings.HasPrefix(e.Name(), ".") {
					continue
				}
				r := row{name: e.Name(), kind: "f", size: -1}
				if info, err := e.Info(); err == nil {
					r.size = info.Size()
				}
				switch t := e.Type(); {
				case t.IsDir():
					r.kind, r.dir, r.name, r.size = "d", true, r.name+"/", -1
				case t&os.ModeSymlink != 0:
					target, _ := readlinkat(int(d.Fd()), e.Name())
					r.kind, r.name = "l", r.name+" -> "+target
				case t&os.ModeNamedPipe != 0:
					r.kind = "p"
				case t&os.ModeSocket != 0:
					r.kind = "s"
				case t&os.ModeDevice != 0:
					r.kind = "c"
				}
				rows = append(rows, r)
			}
			sort.Slice(rows, func(i, j int) bool {
				if rows[i].dir != rows[j].dir {
					return rows[i].dir
				}
				return rows[i].name < rows[j].name
			})
			total := len(rows)
			rows = rows[:min(total, maxListEntries)]
			out := &confine.Capture{Limit: x.outputCap}
			for _, r := range rows {
				size := "-"
				if r.size >= 0 {
					size = strconv.FormatInt(r.size, 10)
				}
				fmt.Fprintf(out, "%s %10s  %s\n", r.kind, size, r.name)
			}
			if total > len(rows) {
				fmt.Fprintf(out, "... [%d more entries not listed]\n", total-len(rows))
			}
			if total == 0 {
				fmt.Fprintf(out, "(empty directory)\n")
			}
			return Result{Content: out.String(), Meta: map[string]any{"path": filepath.Clean(a.Path), "entries": total}}
		},
	}
}
