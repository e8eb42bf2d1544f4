//go:build linux

package launch

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/jail-sandbox/jail/browser"
	"github.com/jail-sandbox/jail/container"
	"github.com/jail-sandbox/jail/desktop"
	"github.com/jail-sandbox/jail/policy"
	"github.com/jail-sandbox/jail/tools"
)

// Docker is the Docker-backed categories of one front end (docs/container.md): one engine
// client shared by them, their containers ended by Close.
type Docker struct {
	Engine  *container.Engine // nil when no client could be made
	Desktop *desktop.Desktop
	Browser *browser.Browsers

	// background reaches the loopback of the session's background processes, for the
	// browser's localhost; set by SetBackground once the tool server exists.
	background BackgroundDialer
}

// SetBackground gives the browser the way to the session's background processes
// (tools.Server.DialBackground); before it, localhost is refused. Call it before serving.
func (dk *Docker) SetBackground(d BackgroundDialer) {
	if dk != nil {
		dk.background = d
	}
}

// orphanTimeout bounds the orphan clean-up a server does at start.
const orphanTimeout = 10 * time.Second

// NewDocker builds the Docker-backed tools from the policy's [docker] values for the
// workspace. Nothing talks to Docker unless the policy enables it: the tools then say why
// they are unready. A server (serve, mcp) first removes jail's orphaned containers. Records
// of ended containers go to audit (nil: none).
func NewDocker(p *policy.Policy, workspace string, audit *policy.AuditLog, server bool, stderr io.Writer) (*Docker, []*tools.Tool, error) {
	d := p.Docker
	disabled := ""
	if !d.Enabled {
		disabled = "the policy does not enable Docker ([docker] enabled = false): the browser and desktop tools run in containers"
	}
	dk := &Docker{}
	eng, err := container.Connect()
	if err != nil {
		disabled = cmp.Or(disabled, err.Error())
	} else {
		dk.Engine = eng
		eng.RawLogs, eng.LogBytes = d.RawLogs, int64(cmp.Or(d.LogBytes, policy.DefaultDockerLogBytes))
		if audit != nil {
			eng.Audit = func(r container.LogRecord) {
				if err := audit.Append(r); err != nil {
					fmt.Fprintf(stderr, "jail: audit: write container record: %v\n", err)
				}
			}
		}
	}
	if server && disabled == "" {
		ctx, cancel := context.WithTimeout(context.Background(), orphanTimeout)
		if eng.Ping(ctx) == nil {
			if _, err := eng.RemoveOrphans(ctx); err != nil {
				fmt.Fprintln(stderr, "jail: warning:", err)
			}
		}
		cancel()
	}
	w, h, err := policy.ParseScreenSize(cmp.Or(d.DesktopSize, policy.DefaultDesktopSize))
	if err != nil {
		return nil, nil, err
	}
	limits := container.Limits{
		Memory:   int64(cmp.Or(d.Memory, policy.DefaultDockerMemory)),
		CPUs:     cmp.Or(d.CPUs, policy.DefaultDockerCPUs),
		Pids:     cmp.Or(d.Pids, policy.DefaultDockerPids),
		TmpfsMax: int64(cmp.Or(d.Tmpfs, policy.DefaultDockerTmpfs)),
	}
	session := sessionID()
	dk.Desktop, err = desktop.New(desktop.Config{Engine: eng, Image: cmp.Or(d.DesktopImage, policy.DefaultDesktopImage),
		Width: w, Height: h, Workspace: workspace, Limits: limits,
		Lifecycle: cmp.Or(d.Lifecycle, policy.DefaultDockerLifecycle), IdleGrace: cmp.Or(d.IdleGrace, policy.DefaultDockerIdleGrace),
		Session: session, Disabled: disabled})
	if err != nil {
		return nil, nil, err
	}
	dk.Browser, err = newBrowsers(p, eng, disabled, workspace, os.Getenv("HOME"), session, limits, audit,
		func(ctx context.Context, agent string, port int) (net.Conn, error) {
			if dk.background == nil {
				return nil, errors.New("localhost: this front end keeps no background processes")
			}
			return dk.background(ctx, agent, port)
		}, stderr)
	if err != nil {
		return nil, nil, err
	}
	return dk, append(dk.Browser.Tools(), dk.Desktop.Tools()...), nil
}

// Close ends every container of the categories and the client.
func (dk *Docker) Close() {
	if dk == nil {
		return
	}
	if dk.Desktop != nil {
		dk.Desktop.Close()
	}
	if dk.Browser != nil {
		dk.Browser.Close()
	}
	if dk.Engine != nil {
		dk.Engine.Close()
	}
}

// sessionID names one front end's session in container labels and records.
func sessionID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// CheckDocker is NewDocker for jail check: the effective policy of the working directory
// (the defaults when it does not load; jail policy check reports why), no server, no audit.
func CheckDocker() (*Docker, []*tools.Tool) {
	penv, err := PolicyEnv("")
	if err != nil {
		return nil, nil
	}
	p, _, err := policy.LoadEffective("", penv)
	if err != nil {
		p = policy.Default(penv)
	}
	dk, ts, err := NewDocker(p, penv.Workspace, nil, false, io.Discard)
	if err != nil {
		return nil, nil
	}
	return dk, ts
}
