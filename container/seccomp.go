package container

import (
	_ "embed"
	"encoding/json"
	"fmt"
)

// dockerDefault is Docker 20.10.24's default seccomp profile, verbatim
// (github.com/docker/docker, profiles/seccomp/default.json, Apache-2.0): what every
// container gets when it asks for nothing.
//
//go:embed seccomp-docker-default.json
var dockerDefault []byte

// SeccompAddition is one rule jail adds to Docker's default, with its reason.
type SeccompAddition struct {
	Names  []string
	Reason string
}

// SeccompAdditions are the only rules added to Docker's default. The default allows these
// calls only to a container holding CAP_SYS_ADMIN (or CAP_SYS_CHROOT), and allows clone
// only without namespace flags; jail's containers hold no capability at all, so without
// these Chromium would have to run with --no-sandbox. Inside the user namespace it makes,
// Chromium holds the capabilities these calls check; outside it they still fail.
func SeccompAdditions() []SeccompAddition {
	return []SeccompAddition{
		{[]string{"clone"}, "Chromium's zygote makes its renderers' user, pid and network namespaces with clone(CLONE_NEWUSER|CLONE_NEWPID|CLONE_NEWNET)"},
		{[]string{"unshare"}, "Chromium's namespace sandbox enters a new user namespace with unshare(CLONE_NEWUSER) to drop the file system"},
		{[]string{"chroot"}, "Chromium's sandbox chroots each renderer into an empty directory (/proc/self/fdinfo) once it holds CAP_SYS_CHROOT in its own user namespace"},
	}
}

// SeccompProfile is the profile every container of jail's runs under, as the JSON the
// engine takes: Docker's default with [SeccompAdditions] appended as unconditional allows.
func SeccompProfile() (string, error) {
	var p map[string]any
	if err := json.Unmarshal(dockerDefault, &p); err != nil {
		return "", fmt.Errorf("container: embedded seccomp profile: %w", err)
	}
	rules, _ := p["syscalls"].([]any)
	for _, a := range SeccompAdditions() {
		rules = append(rules, map[string]any{"names": a.Names, "action": "SCMP_ACT_ALLOW", "comment": "jail: " + a.Reason})
	}
	p["syscalls"] = rules
	b, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("container: encode seccomp profile: %w", err)
	}
	return string(b), nil
}
