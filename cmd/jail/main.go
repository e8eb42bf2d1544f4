//go:build linux

// Command jail runs commands and AI agents' tool calls inside a sandbox
// made of Linux namespaces, Landlock and seccomp. main only parses flags
// and wires packages together; the confinement lives in package confine.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/jail-sandbox/jail/confine"
	"github.com/jail-sandbox/jail/container"
	"github.com/jail-sandbox/jail/desktop"
	"github.com/jail-sandbox/jail/gitview"
	"github.com/jail-sandbox/jail/launch"
	"github.com/jail-sandbox/jail/policy"
	"github.com/jail-sandbox/jail/tools"
)

const usage = `jail: run commands inside a Landlock, seccomp and namespace sandbox

usage:
  jail run [flags] -- CMD [ARG...]   run CMD confined (jail run -h for flags)
  jail tool NAME '{json}'|-          one tool call in a confined worker, result as JSON
  jail serve [flags]                 JSON-lines tool server on stdin/stdout
  jail mcp [flags]                   Model Context Protocol server on stdin/stdout
  jail clean [-w DIR|--all|--gone] [--dry-run]  remove persistent sandbox homes
  jail check                         which layers this kernel and user give, and why not
  jail policy check FILE             validate a policy file
  jail policy explain [flags]        which tools an agent or role gets, and why
  jail version
`

func main() {
	// The sandbox's init is this same binary, re-executed; it must take
	// over before anything else runs.
	if confine.IsChild() {
		confine.ChildMain()
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin *os.File, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case launch.WorkerCommand:
		// A tool worker, run as the command of a sandbox by jail serve
		// and jail tool (tools.WorkerMain); not for people.
		return tools.WorkerMain(stdin, stdout)
	case tools.RelayCommand:
		// The loopback relay beside a background bash process, inside its
		// sandbox (docs/background.md); not for people.
		return tools.RelayMain()
	case container.InitCommand:
		// jail's init inside a browser or desktop container, bound there
		// read-only (docs/container.md); not for people.
		return container.InitMain(args[1:])
	case desktop.DriverCommand:
		// The desktop's driver inside its container, run by that init.
		return desktop.DriverMain(args[1:])
	case confine.AdoptCommand:
		// A cached run whose sandbox made a repository hands it over
		// (docs/git.md); not for people.
		return gitview.AdoptMain(args[1:], stderr, policy.DefaultProtected(), policy.DefaultProtectedLater())
	case "tool":
		return toolMain(args[1:], stdin, stdout, stderr)
	case "serve":
		return serveMain(args[1:], stdin, stdout, stderr)
	case "mcp":
		return mcpMain(args[1:], stdin, stdout, stderr)
	case "run":
		return runMain(args[1:], stdin, stdout, stderr)
	case "check":
		return checkMain(args[1:], stdout, stderr)
	case "clean":
		return cleanMain(args[1:], stdout, stderr)
	case "policy":
		return policyMain(args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "jail", version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "jail: unknown command %q\n%s", args[0], usage)
	return 2
}

// version is set at link time by the Makefile.
var version = "dev"
