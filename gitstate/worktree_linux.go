package gitstate

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// A linked worktree (git worktree add DIR) is a directory of the
// repository's, worktrees/<name>, holding the worktree's HEAD, index
// and reflog, a commondir naming the repository ("../.."), and gitdir
// naming the worktree's .git, a gitfile in DIR that names worktrees/<name>
// back. Git run in DIR reads everything else (config, hooks, objects,
// refs) from the repository itself: the host's. So one the sandbox added
// is adopted when DIR lies where the host sees what the sandbox wrote
// (Options.Worktree judges it: in the workspace, its gitfile the one git
// wrote) with only those files, each checked as the repository's own are;
// config.worktree, locked and everything else are not.

// maxWorktreeFile bounds a worktree's commondir and gitdir files.
const maxWorktreeFile = 4096

// adoptWorktrees adopts the linked worktrees the sandbox added (new
// worktrees/<name> directories), after the objects and refs came in.
func (a *adopter) adoptWorktrees(up *upperTree) {
	seen := map[string]bool{}
	for _, p := range up.under("worktrees") {
		name, _, _ := strings.Cut(strings.TrimPrefix(p, "worktrees/"), "/")
		if p == "worktrees" || seen[name] {
			continue
		}
		seen[name] = true
		if _, err := lstatBeneath(a.gitfd, "worktrees/"+name); err == nil {
			continue // the host's: what the sandbox changed in it is dropped as before
		}
		why, gitfile := a.adoptWorktree(up, name)
		for _, q := range up.under("worktrees/" + name) {
			up.get(q).used = true
		}
		if why != "" {
			a.rep.dropped("worktrees/%s (git worktree add%s): %s", esc(name), at(gitfile), why)
		}
	}
	if e := up.get("worktrees"); e != nil && e.kind == kindDir {
		e.used = true
	}
}

func at(gitfile string) string {
	if gitfile == "" {
		return ""
	}
	return " " + esc(filepath.Dir(gitfile))
}

// adoptWorktree adopts worktrees/<name>, or returns why not (and the
// worktree's .git as its gitdir file names it, when it could be read).
func (a *adopter) adoptWorktree(up *upperTree, name string) (why, gitfile string) {
	dir := "worktrees/" + name
	if !validRefPath(name) || strings.Contains(name, "/") {
		return "not a name git gives a worktree", ""
	}
	read := func(f string, max int64) ([]byte, error) {
		e := up.get(dir + "/" + f)
		if e == nil {
			return nil, unix.ENOENT
		}
		if e.kind != kindFile {
			return nil, errors.New("not a regular file")
		}
		return up.read(dir+"/"+f, max)
	}
	g, err := read("gitdir", maxWorktreeFile)
	if err != nil {
		return fmt.Sprintf("its gitdir file: %v", err), ""
	}
	gitfile = strings.TrimSuffix(string(g), "\n")
	if !filepath.IsAbs(gitfile) || filepath.Clean(gitfile) != gitfile || strings.ContainsAny(gitfile, "\n\x00") || !printable(gitfile, maxWorktreeFile) {
		return "its gitdir file does not name an absolute path", ""
	}
	if a.opt.Worktree == nil {
		return "linked worktrees are adopted only where the caller knows the sandbox's writes reach the host", gitfile
	}
	if why := a.opt.Worktree(name, gitfile); why != "" {
		return why, gitfile
	}
	if c, err := read("commondir", maxWorktreeFile); err != nil || string(c) != "../..\n" {
		return "its commondir is not the repository's own (../..)", gitfile
	}
	h, err := read("HEAD", maxRefFile)
	if err != nil {
		return fmt.Sprintf("its HEAD: %v", err), gitfile
	}
	head, err := parseRefValue("HEAD", h, a.hexLen)
	if err != nil {
		return fmt.Sprintf("its HEAD: %v", err), gitfile
	}
	if !strings.HasPrefix(head, "ref: ") && !a.objects.has(head) {
		return "its HEAD names an object the host does not have", gitfile
	}
	// The worktree's HEAD is checked out by the host's git there as the
	// repository's is: judged the same way (adoptRef).
	if strings.HasPrefix(head, "ref: ") {
		host, err := a.refs.all()
		if err != nil {
			return fmt.Sprintf("its HEAD: read the host's refs: %v", err), gitfile
		}
		if why := symrefWhy(head, host, false); why != "" {
			return "its HEAD is " + why, gitfile
		}
	} else if a.opt.Hold != nil {
		if paths, err := a.opt.Hold([]string{head}); err != nil || len(paths) > 0 {
			return "its HEAD is detached at a commit that would be held: " + heldWhy(paths, err), gitfile
		}
	}
	var index []byte
	if data, err := read("index", maxIndexFile); err == nil {
		if index, err = a.worktreeIndex(up, data); err != nil {
			return fmt.Sprintf("its index: %v", err), gitfile
		}
	} else if !errors.Is(err, unix.ENOENT) {
		return fmt.Sprintf("its index: %v", err), gitfile
	}
	var logs []byte
	if data, err := read("logs/HEAD", maxReflogFile); err == nil {
		for _, l := range strings.SplitAfter(string(data), "\n") {
			if l != "" && validReflogLine(l, a.hexLen) && a.reflogObjects(l) {
				logs = append(logs, l...)
			}
		}
	}
	// Made new, beneath the host's git directory: a worktree of that
	// name made on the host meanwhile is not written over.
	if err := unix.Mkdirat(a.gitfd, "worktrees", 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Sprintf("make worktrees/: %v", err), gitfile
	}
	wfd, err := openDir(a.gitfd, "worktrees")
	if err != nil {
		return fmt.Sprintf("open worktrees/: %v", err), gitfile
	}
	defer unix.Close(wfd)
	if err := unix.Mkdirat(wfd, name, 0o755); err != nil {
		if errors.Is(err, unix.EEXIST) {
			a.rep.conflict("%s: a worktree of that name was made on the host during the run; the host's kept", esc(dir))
			return "", gitfile
		}
		return fmt.Sprintf("make %s: %v", dir, err), gitfile
	}
	dfd, err := openDir(wfd, name)
	if err != nil {
		return fmt.Sprintf("open %s: %v", dir, err), gitfile
	}
	defer unix.Close(dfd)
	files := []struct {
		name string
		data []byte
	}{{"commondir", []byte("../..\n")}, {"gitdir", []byte(gitfile + "\n")}, {"index", index}, {"logs/HEAD", logs}, {"HEAD", h}}
	for _, f := range files {
		if f.data == nil {
			continue
		}
		if f.name == "logs/HEAD" {
			if err := unix.Mkdirat(dfd, "logs", 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
				return fmt.Sprintf("make %s/logs: %v", dir, err), gitfile
			}
		}
		if err := writeFile(dfd, f.name, f.data, 0o644); err != nil {
			return fmt.Sprintf("write %s/%s: %v", dir, f.name, err), gitfile
		}
	}
	a.rep.appliedNotable("%s (git worktree add %s)", esc(dir), esc(filepath.Dir(gitfile)))
	a.rep.Worktrees = append(a.rep.Worktrees, gitfile)
	return "", gitfile
}

// worktreeIndex checks a new worktree's index as adoptIndex checks the
// repository's, against no host index: no gitlink, every object on the
// host, and written whole without flags, stat data or extensions that
// would hide a change.
func (a *adopter) worktreeIndex(up *upperTree, data []byte) ([]byte, error) {
	data, err := Unsplit(data, a.hexLen/2, a.sharedIndex(up))
	if err != nil {
		return nil, err
	}
	ix, err := ParseIndex(data, a.hexLen/2)
	if err != nil {
		return nil, err
	}
	if bad := newGitlinks(ix, nil, nil); len(bad) > 0 {
		return nil, fmt.Errorf("stages gitlinks (nested repositories) %s", strings.Join(bad, ", "))
	}
	for _, e := range ix.Entries {
		if e.Mode != modeGitlink && !a.objects.has(e.OID) {
			return nil, fmt.Errorf("stages %s, an object the host does not have", esc(e.Path))
		}
	}
	out, _ := ix.adoptable(data, nil, a.hexLen/2, nil)
	return out, nil
}

// WorktreeGitfile is the content git writes in a linked worktree's .git
// for the repository whose git directory is gitdir and the worktree
// name.
func WorktreeGitfile(gitdir, name string) []byte {
	return []byte("gitdir: " + filepath.Join(gitdir, "worktrees", name) + "\n")
}

// IsWorktreeGitfile reports whether data is WorktreeGitfile's for some
// name, and which.
func IsWorktreeGitfile(data []byte, gitdir string) (string, bool) {
	prefix := []byte("gitdir: " + filepath.Join(gitdir, "worktrees") + "/")
	if !bytes.HasPrefix(data, prefix) || !bytes.HasSuffix(data, []byte("\n")) {
		return "", false
	}
	name := string(data[len(prefix) : len(data)-1])
	return name, validRefPath(name) && !strings.Contains(name, "/")
}
