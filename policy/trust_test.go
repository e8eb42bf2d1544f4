package policy

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The approver runs from "/" with a minimal environment: a module or
// variable the workspace (the caller's directory) could plant is not used.
func TestApproverRunsFromRootWithMinimalEnv(t *testing.T) {
	ws := t.TempDir()
	t.Chdir(ws)
	t.Setenv("PYTHONPATH", ws)
	t.Setenv("JAIL_TEST_SECRET", "s3cret")
	g, _ := approverGate(t, `echo "{\"decision\":\"deny\",\"reason\":\"cwd=$(pwd) secret=$JAIL_TEST_SECRET pp=$PYTHONPATH path=$PATH\"}"`, "", nil)
	d := g.Check(context.Background(), bashCall("make"))
	if !strings.Contains(d.Reason, "cwd=/ secret= pp= path="+approverPath) {
		t.Fatalf("approver ran with %q", d.Reason)
	}
	env := ApproverEnv([]string{"HOME=/h", "LC_ALL=C", "LD_PRELOAD=/x.so", "PATH=.:/bin", "BASH_ENV=/x"})
	if strings.Join(env, " ") != "PATH="+approverPath+" HOME=/h LC_ALL=C" {
		t.Fatalf("ApproverEnv: %q", env)
	}
}

func TestCheckTrusted(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "policy.toml")
	os.WriteFile(f, []byte("[limits]\n"), 0o644)
	if err := CheckTrusted("policy file", f); err != nil {
		t.Fatalf("own file: %v", err)
	}
	os.Chmod(f, 0o664)
	if err := CheckTrusted("policy file", f); !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "chmod go-w "+f) {
		t.Fatalf("group-writable file: %v", err)
	}
	os.Chmod(f, 0o644)
	os.Chmod(dir, 0o777)
	if err := CheckTrusted("policy file", f); !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "its directory "+dir) {
		t.Fatalf("world-writable directory: %v", err)
	}
	syscall.Chmod(dir, 0o1777) // sticky, as /tmp: others cannot replace the file
	if err := CheckTrusted("policy file", f); err != nil {
		t.Fatalf("sticky directory: %v", err)
	}
	os.Chmod(dir, 0o700)
	// A symlink is checked at both ends.
	open := t.TempDir()
	os.Chmod(open, 0o777)
	link := filepath.Join(open, "link.toml")
	os.Symlink(f, link)
	if err := CheckTrusted("policy file", link); !errors.Is(err, ErrUntrusted) {
		t.Fatalf("link in a world-writable directory: %v", err)
	}
	if err := CheckTrusted("policy file", filepath.Join(dir, "none")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	// LoadEffective and LoadGrants refuse what CheckTrusted refuses.
	os.Chmod(f, 0o666)
	if _, _, err := LoadEffective(f, testEnv(t)); !errors.Is(err, ErrUntrusted) {
		t.Fatalf("LoadEffective of a world-writable policy: %v", err)
	}
	if _, err := LoadGrants(f); !errors.Is(err, ErrUntrusted) {
		t.Fatalf("LoadGrants of a world-writable file: %v", err)
	}
	if os.Geteuid() == 0 {
		os.Chmod(f, 0o644)
		os.Chown(f, 65534, 65534)
		if err := CheckTrusted("policy file", f); !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "owned by uid 65534") {
			t.Fatalf("file of another user: %v", err)
		}
	}
}
