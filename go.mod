module github.com/jail-sandbox/jail

go 1.26.8

require (
	github.com/BurntSushi/toml v1.6.0 // indirect
	github.com/landlock-lsm/go-landlock v0.11.2 // indirect
	github.com/seccomp/libseccomp-golang v0.11.1 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	kernel.org/pub/linux/libs/security/libcap/psx v1.2.78 // indirect
	mvdan.cc/sh/v3 v3.14.1 // indirect
)
