//go:build linux

package tools

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestScriptSurvivesEveryShell runs bashScript's output in dash, bash in
// POSIX mode and bash, with a session that holds variables bash keeps
// readonly: setting them must not end the script before the command runs,
// the command must not read the script, and quoting must hold.
func TestScriptSurvivesEveryShell(t *testing.T) {
	base := []string{"PATH=/usr/bin:/bin", "DROPPED=1", "NOT-A-NAME=x"}
	env := []string{"PATH=/usr/bin:/bin", "UID=12345", "EUID=1", "PPID=1", "SHELLOPTS=x", "BASHOPTS=y", "KEEP=it's $(id) `x` \"q\"\nline"}
	command := `cat; echo "ran:$KEEP:${DROPPED-unset}"; pwd`
	for _, sh := range [][]string{{"/bin/sh", "-s"}, {"/bin/bash", "--posix", "-s"}, {"/bin/bash", "-s"}} {
		cmd := exec.Command(sh[0], sh[1:]...)
		cmd.Env, cmd.Dir = base, "/"
		cmd.Stdin = strings.NewReader(bashScript(command, "/tmp", base, env, ""))
		var out bytes.Buffer
		cmd.Stdout = &out
		r, w, _ := os.Pipe()
		cmd.ExtraFiles = []*os.File{w}
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %v\n%s", sh, err, out.String())
		}
		w.Close()
		r.Close()
		want := "ran:it's $(id) `x` \"q\"\nline:unset\n/tmp\n"
		if out.String() != want {
			t.Errorf("%v: got %q, want %q", sh, out.String(), want)
		}
	}
}

// TestParseStateRefusesForgedWords: a command can write its own fd 3; what
// it writes must not make the supervisor look anything up or run anything.
func TestParseStateRefusesForgedWords(t *testing.T) {
	for _, forged := range []string{
		"/\x00export X=~root\n",
		"/\x00export X=$HOME\n",
		"/\x00export X=\"$(id)\"\n",
		"/\x00export X=$((1+1))\n",
		"/\x00export X=`id`\n",
		"/\x00X=1 echo hi\n",
	} {
		if s := parseState([]byte(forged)); s != nil {
			t.Errorf("%q accepted: %+v", forged, s)
		}
	}
	if s := parseState([]byte("/\x00export A='~root' B=\"x y\" C=$'a\\nb'\n")); s == nil || strings.Join(s.Env, ",") != "A=~root,B=x y,C=a\nb" {
		t.Errorf("quoted words refused or changed: %+v", s)
	}
}

// TestShellPool drives the pool of made-ahead shells with a spawn that
// makes empty shells: concurrency is bounded by the slots, a call waits
// for a shell being made rather than make another, a failed making reaches
// the waiting call, and close ends every shell and refuses later calls.
func TestShellPool(t *testing.T) {
	var made, inUse, peak atomic.Int32
	fail := atomic.Bool{}
	release := make(chan struct{})
	spawn := func(ctx context.Context, ro bool) (*Shell, error) {
		<-release
		if fail.Load() {
			return nil, errors.New("no sandbox today")
		}
		made.Add(1)
		return &Shell{}, nil
	}
	p := newShells(spawn, 1, 2)
	close(release) // every making finishes at once from here
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sh, err := p.take(context.Background(), false)
			if err != nil {
				t.Error(err)
				return
			}
			if n := inUse.Add(1); n > peak.Load() {
				peak.Store(n)
			}
			time.Sleep(5 * time.Millisecond)
			inUse.Add(-1)
			p.done(sh, false)
		}()
	}
	wg.Wait()
	if peak.Load() > 2 {
		t.Errorf("%d shells in use at once, slots allow 2", peak.Load())
	}
	fail.Store(true)
	// The ready one is used first; the next call waits for the failing
	// making, learns of it, tries itself and reports the error.
	for i := range 3 {
		sh, err := p.take(context.Background(), false)
		if err != nil {
			if !strings.Contains(err.Error(), "no sandbox today") {
				t.Fatalf("call %d: %v", i, err)
			}
			break
		}
		p.done(sh, false)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.take(ctx, false); err == nil {
		t.Error("a cancelled take succeeded")
	}
	p.close()
	if _, err := p.take(context.Background(), false); !errors.Is(err, errShellsClosed) {
		t.Errorf("take after close: %v", err)
	}
}
