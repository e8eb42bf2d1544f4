package gitcmd

import (
	"slices"
	"strconv"
	"strings"
)

// ProgramSetting returns the first setting of the git config file text
// data that makes git run a program or read another file ([RunsProgram]:
// core.fsmonitor, an alias that is a shell command, include.path, ...),
// as "key = value", or "" for none. keep lists include paths the caller
// wrote itself and vouches for (jail's includes of the user's read-only
// config). A line it cannot read as git would is reported too: the
// reading errs towards the program.
func ProgramSetting(data []byte, keep []string) string {
	sets, err := ParseConfig(data)
	if err != nil {
		return "unreadable file (" + err.Error() + ")"
	}
	for _, kv := range sets {
		full, v := kv.Key, kv.Value
		if strings.HasPrefix(full, "alias.") && strings.HasPrefix(v, "!") {
			return full + " = " + strconv.Quote(v) // a shell command under a name of its own
		}
		if !RunsProgram(full) {
			continue
		}
		if isInclude(full) && slices.Contains(keep, v) {
			continue
		}
		return full + " = " + strconv.Quote(v)
	}
	return ""
}

func isInclude(key string) bool {
	k := strings.ToLower(key)
	return k == "include.path" || strings.HasPrefix(k, "includeif.") && strings.HasSuffix(k, ".path")
}
