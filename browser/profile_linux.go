package browser

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// containerUser is the uid the container layer runs a root caller's containers as.
const containerUser = 65534

// makeProfile makes the profile directory name under state (jail's own state directory,
// which no sandbox sees) by descriptor: made with mkdirat, opened without following a
// symlink, and given to the user the containers run as (the caller, or 65534 for root), mode
// 0700. The browser in its container writes inside it; the supervisor never reads it.
func makeProfile(state, name string) error {
	sfd, err := unix.Open(state, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("browser: open the profiles' directory %s: %w", state, err)
	}
	defer unix.Close(sfd)
	if err := unix.Mkdirat(sfd, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("browser: make the profile %s: %w", name, err)
	}
	fd, err := unix.Openat2(sfd, name, &unix.OpenHow{Flags: unix.O_DIRECTORY | unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return fmt.Errorf("browser: open the profile %s (a symlink there is refused): %w", name, err)
	}
	defer unix.Close(fd)
	if os.Getuid() == 0 {
		if err := unix.Fchown(fd, containerUser, containerUser); err != nil {
			return fmt.Errorf("browser: give the profile %s to uid %d: %w", name, containerUser, err)
		}
	}
	if err := unix.Fchmod(fd, 0o700); err != nil {
		return fmt.Errorf("browser: profile %s mode: %w", name, err)
	}
	return nil
}
