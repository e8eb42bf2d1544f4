//go:build !linux

package container

import "errors"

type supervisor struct{}

func (supervisor) String() string { return "" }

func currentSupervisor() (supervisor, error) {
	return supervisor{}, errors.New("container: the Docker-backed tools run on Linux only")
}

func parseSupervisor(string) supervisor { return supervisor{} }

func (supervisor) alive() bool { return false }
