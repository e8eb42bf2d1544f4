# jail: build, test and measure. `make test` and `make demo` install what
# they need first (scripts/deps.sh), so both work on a fresh machine.

GO        ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
VERSION   ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
# Static: the binary is copied to machines without libseccomp. osusergo and
# netgo keep glibc's NSS (which cannot work statically) out of the link.
TAGS      := osusergo,netgo
LDFLAGS   := -s -w -X main.version=$(VERSION) -linkmode external -extldflags "-static"
export CGO_ENABLED := 1

.PHONY: all deps build images test unit integration demo bench fmt vet staticcheck lint clean

all: build

deps:
	./scripts/deps.sh

build: deps
	$(GO) build -trimpath -tags $(TAGS) -ldflags '$(LDFLAGS)' -o jail ./cmd/jail
	@file jail | grep -q 'statically linked' || { echo "jail is not statically linked"; exit 1; }

# The browser and desktop tools' images, from Debian's packages with no
# registry (images/build.sh; a rebuild is skipped when the inputs' hash
# matches). scripts/dockerd.sh starts an engine when none answers.
images: deps
	./scripts/dockerd.sh
	./images/build.sh

# The README's test command. Integration tests attack the built binary as
# root and as an unprivileged user they create (jailtest). Where a Docker
# engine answers or can be started, the images are built and the Docker
# tests must run (JAIL_REQUIRE_DOCKER=1 turns their skips into failures).
# The integration package takes 10-15 minutes on a quiet 2-core machine and
# about 30 under heavy load: the timeout leaves room for that, below CI's 90.
test: build
	$(GO) vet ./...
	if ./scripts/dockerd.sh; then ./images/build.sh || exit 1; export JAIL_REQUIRE_DOCKER=1; \
	else echo "make test: no Docker engine: the browser and desktop tests skip, saying why"; fi; \
	$(GO) test -count=1 -timeout 60m ./...

unit: deps
	$(GO) test -count=1 $$($(GO) list ./... | grep -v /integration)

integration: build
	$(GO) test -count=1 -timeout 60m ./integration/

# The README's main job: a command inside the embedded default sandbox.
demo: build
	./jail run -- /bin/sh -c 'echo "hello from $$(hostname): uid $$(id -u), cwd $$PWD"; ls -A "$$HOME" | wc -l | xargs echo "entries in HOME:"; cat /etc/shadow | wc -c | xargs echo "bytes of /etc/shadow:"'

# jail run -- /bin/true against bare /bin/true and bubblewrap, interleaved,
# plus jail's peak RSS; the workload section (go build, npx, git status in
# jail against bare); and the Go benchmarks.
bench: build
	$(GO) build -o bench/interleave.bin ./bench/interleave
	./bench/run.sh ./jail bench/interleave.bin
	./bench/workload.sh ./jail bench/interleave.bin
	./bench/git.sh ./jail "" bench/interleave.bin
	$(GO) test -run '^$$' -bench . -benchtime 20x ./confine/

fmt:
	gofmt -l -w .

vet:
	$(GO) vet ./...

staticcheck:
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

lint: vet staticcheck
	@test -z "$$(gofmt -l .)" || { gofmt -l .; exit 1; }

clean:
	rm -f jail
