package policy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// SourceApprover marks a decision taken by the operator's external approver command.
const SourceApprover = "approver"

// DefaultApproverTimeout bounds an approver that does not answer.
const DefaultApproverTimeout = 5 * time.Second

// ApproverRequest is the JSON object an approver reads on stdin (one object, then EOF).
type ApproverRequest struct {
	Tool        string   `json:"tool"`
	ArgsDigest  string   `json:"args_digest"`
	Risk        Risk     `json:"risk"`
	ActionTypes []Action `json:"action_types"`
	Reason      string   `json:"reason"`
	Agent       string   `json:"agent"`
	Role        string   `json:"role"`
}

// ApproverResponse is the one JSON line an approver writes on stdout.
type ApproverResponse struct {
	Decision string `json:"decision"` // approve, deny or escalate
	Reason   string `json:"reason"`
}

// Approver verdicts.
const (
	VerdictApprove  = "approve"
	VerdictDeny     = "deny"
	VerdictEscalate = "escalate"
)

// Approver runs the operator's approval command ([approval] approver). It runs outside every
// sandbox: it is the operator's program, trusted like jail itself, and it must be able to reach
// whatever it consults (a ticket system, a policy service). It runs from "/" with a minimal
// environment ([ApproverEnv]), never the workspace and the caller's variables, since a
// sandbox can write the workspace. It never sees the raw arguments, only their digest.
type Approver struct {
	Argv    []string
	Timeout time.Duration // zero means DefaultApproverTimeout
}

// maxApproverOutput bounds what is read from an approver, so a runaway one cannot exhaust jail.
const maxApproverOutput = 64 << 10

// Decide runs the command once. Any failure (the program missing, a non-zero exit, no answer in
// time, output that is not one JSON line with a known decision) is an error naming what went
// wrong; the gate turns it into a denial.
func (a *Approver) Decide(ctx context.Context, req ApproverRequest) (ApproverResponse, error) {
	timeout := a.Timeout
	if timeout <= 0 {
		timeout = DefaultApproverTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	in, err := json.Marshal(req)
	if err != nil {
		return ApproverResponse{}, fmt.Errorf("approver: encode request: %w", err)
	}
	cmd := exec.CommandContext(ctx, a.Argv[0], a.Argv[1:]...)
	// Not the caller's working directory, which is usually the workspace:
	// `python3 -m approver`, `npx approver` or `./gradlew` would load code a
	// sandbox planted there. Not the caller's environment either
	// (PYTHONPATH, NODE_OPTIONS, LD_PRELOAD, BASH_ENV, a PATH with the
	// workspace in it): the approver gets ApproverEnv.
	cmd.Dir = "/"
	cmd.Env = ApproverEnv(os.Environ())
	cmd.Stdin = bytes.NewReader(append(in, '\n'))
	var out, errb limitedBuffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	// A child the approver left behind may hold its stdout open; do not wait for it past the
	// kill.
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	switch {
	case ctx.Err() != nil:
		return ApproverResponse{}, fmt.Errorf("approver: no answer within %s", timeout)
	case errors.Is(err, exec.ErrNotFound) || errors.Is(err, exec.ErrDot):
		return ApproverResponse{}, fmt.Errorf("approver: %w", err)
	case err != nil:
		msg := strings.TrimSpace(errb.String())
		if msg != "" {
			msg = ": " + firstLine(msg)
		}
		return ApproverResponse{}, fmt.Errorf("approver: %s failed%s: %w", a.Argv[0], msg, err)
	}
	line, _, _ := bufio.NewReader(strings.NewReader(out.String())).ReadLine()
	var resp ApproverResponse
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&resp); err != nil {
		return ApproverResponse{}, fmt.Errorf("approver: answer %q is not a JSON object {\"decision\": ..., \"reason\": ...}: %w", truncate(string(line), 80), err)
	}
	switch resp.Decision {
	case VerdictApprove, VerdictDeny, VerdictEscalate:
		return resp, nil
	}
	return ApproverResponse{}, fmt.Errorf("approver: unknown decision %q (accepted: approve, deny, escalate)", resp.Decision)
}

// approverPath is the PATH an approver runs with: system directories only.
const approverPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// ApproverEnv is the approver's environment: who and where the user is
// (HOME USER LOGNAME), the locale and time zone, and a PATH of system
// directories. Nothing else of the caller's passes; an approver that needs
// a token reads it from a file of its own.
func ApproverEnv(caller []string) []string {
	env := []string{"PATH=" + approverPath}
	for _, kv := range caller {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "HOME", k == "USER", k == "LOGNAME", k == "LANG", k == "TZ", strings.HasPrefix(k, "LC_"):
			env = append(env, kv)
		}
	}
	return env
}

// limitedBuffer keeps the first maxApproverOutput bytes and discards the rest, so the command
// never blocks on a full pipe.
type limitedBuffer struct{ bytes.Buffer }

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := maxApproverOutput - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return truncate(l, 200)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
