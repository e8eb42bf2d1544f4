//go:build linux

package tools

import (
	"context"
	"io"
	"os"
	"path"
	"runtime"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// walkOptions say what a walk skips.
type walkOptions struct {
	gitignore bool // honour .gitignore files (from the workspace root down)
	hidden    bool // include names starting with "."
}

// walkJob is one directory or file waiting in the walk's queue.
type walkJob struct {
	rel   string // relative to the workspace root
	dir   bool
	chain ignoreChain
}

// walkTree visits every file beneath start (relative to the workspace,
// itself resolved with Resolve), calling visit from several goroutines at
// once. Directories are listed and files visited by one pool of
// runtime.NumCPU()*2 goroutines, so one huge directory is shared out as
// well as many small ones. Symlinks are not followed (as git and ripgrep
// do not); .git is never entered. It returns when every job is done or ctx
// is cancelled; every goroutine it starts has ended by then.
func (w *Workspace) walkTree(ctx context.Context, start string, o walkOptions, visit func(rel string)) error {
	rel, err := w.Rel(start)
	if err != nil {
		return err
	}
	rel = path.Clean(rel)
	fd, err := Resolve(w.fd, rel, unix.O_PATH, 0)
	if err != nil {
		return w.explain(start, err)
	}
	var st unix.Stat_t
	err = unix.Fstat(fd, &st)
	unix.Close(fd)
	if err != nil {
		return w.explain(start, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		visit(rel)
		return nil
	}
	var chain ignoreChain
	if o.gitignore {
		chain = w.ancestorIgnores(rel)
	}

	var (
		mu      sync.Mutex
		cond    = sync.NewCond(&mu)
		queue   = []walkJob{{rel: rel, dir: true, chain: chain}}
		pending = 1 // jobs queued or running
	)
	push := func(js []walkJob) {
		mu.Lock()
		queue = append(queue, js...)
		pending += len(js)
		mu.Unlock()
		cond.Broadcast()
	}
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		pending, queue = 0, nil
		mu.Unlock()
		cond.Broadcast()
	})
	defer stop()
	var wg sync.WaitGroup
	for range runtime.NumCPU() * 2 {
		wg.Add(1)
		go func() {
			// Lifetime: until the queue is drained or ctx is cancelled.
			defer wg.Done()
			for {
				mu.Lock()
				for len(queue) == 0 && pending > 0 {
					cond.Wait()
				}
				if pending == 0 {
					mu.Unlock()
					return
				}
				j := queue[len(queue)-1]
				queue = queue[:len(queue)-1]
				mu.Unlock()
				if j.dir {
					push(w.list(j, o))
				} else {
					visit(j.rel)
				}
				mu.Lock()
				if pending > 0 {
					pending--
				}
				done := pending == 0
				mu.Unlock()
				if done {
					cond.Broadcast()
				}
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}

// ancestorIgnores loads the .gitignore files from the workspace root down
// to rel, so a search that starts in a subdirectory honours them too.
func (w *Workspace) ancestorIgnores(rel string) ignoreChain {
	var chain ignoreChain
	dirs := []string{""}
	if rel != "." {
		parts := strings.Split(rel, "/")
		for i := 1; i < len(parts); i++ {
			dirs = append(dirs, strings.Join(parts[:i], "/"))
		}
	}
	for _, d := range dirs {
		if f := w.loadIgnore(d); f != nil {
			chain = append(chain, f)
		}
	}
	return chain
}

func (w *Workspace) loadIgnore(dir string) *ignoreFile {
	p := ".gitignore"
	if dir != "" && dir != "." {
		p = dir + "/.gitignore"
	}
	// A .gitignore that is a FIFO must not hold the walk.
	fd, err := ResolveRegular(w.fd, p, unix.O_NOFOLLOW)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return nil
	}
	if dir == "." {
		dir = ""
	}
	return parseIgnore(dir, string(b))
}

// list reads one directory and returns its children as jobs.
func (w *Workspace) list(j walkJob, o walkOptions) []walkJob {
	fd, err := Resolve(w.fd, j.rel, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil // vanished or unreadable: a search skips it, as rg does
	}
	d := os.NewFile(uintptr(fd), j.rel)
	names, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return nil
	}
	chain := j.chain
	if o.gitignore && j.rel != "." {
		// The root's own file is already in the chain (ancestorIgnores).
		for _, e := range names {
			if e.Name() == ".gitignore" && e.Type().IsRegular() {
				if f := w.loadIgnore(j.rel); f != nil {
					chain = append(chain[:len(chain):len(chain)], f)
				}
				break
			}
		}
	}
	out := make([]walkJob, 0, len(names))
	for _, e := range names {
		name := e.Name()
		if !o.hidden && name[0] == '.' || name == ".git" {
			continue
		}
		t := e.Type()
		if !t.IsDir() && !t.IsRegular() {
			continue // symlinks, devices, sockets: not followed, not read
		}
		rel := name
		if j.rel != "." {
			rel = j.rel + "/" + name
		}
		if o.gitignore && chain.ignored(rel, t.IsDir()) {
			continue
		}
		out = append(out, walkJob{rel: rel, dir: t.IsDir(), chain: chain})
	}
	return out
}
