package desktop

import (
	"bufio"
	"encoding/json"
)

// DriverCommand is argv[1] of the driver inside the desktop container (argv[0] is
// container.BinaryPath, the jail binary bound read-only).
const DriverCommand = "__desktop-driver"

// The driver protocol: JSON lines over the container's attached stdio, one response per
// request, in order. The first line the driver writes is a [hello] once Xvfb answers.
//
//	supervisor (Desktop)                        driver (DriverMain, in the container)
//	--------------------                        -------------------------------------
//	                                  <-------  {"hello":{"width":1280,"height":800}}
//	{"id":1,"op":"launch","args":{...}} ----->  start the app, wait for its window
//	                                  <-------  {"id":1,"result":{...}}
//	{"id":2,"op":"screenshot"}        ------->  xwd -root, to PNG
//	                                  <-------  {"id":2,"result":{"png":"..."}}
//	{"id":3,"op":"click",...}         ------->  the app died: nothing is done
//	                                  <-------  {"id":3,"error":"app not running: ...","app":{...}}
//
// Everything the driver writes comes from inside the container, where the app under test
// runs with the driver's uid: the supervisor bounds every line, matches ids and decodes and
// checks every screenshot before it writes or returns one.
type request struct {
	ID   uint64          `json:"id"`
	Op   string          `json:"op"`
	Args json.RawMessage `json:"args,omitempty"`
}

type response struct {
	ID     uint64          `json:"id"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
	// App is the app's state with an "app not running" error.
	App   *appState `json:"app,omitempty"`
	Hello *hello    `json:"hello,omitempty"`
}

type hello struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

// appState is what the driver knows of the last app launched.
type appState struct {
	Command  []string `json:"command"`
	Running  bool     `json:"running"`
	ExitCode int      `json:"exit_code"`
	Signal   string   `json:"signal,omitempty"`
	Output   string   `json:"output"` // its last output (stdout and stderr)
}

// The arguments of each op; the tools' schemas say the same to a model.
type launchArgs struct {
	Command []string `json:"command"`
	Dir     string   `json:"dir,omitempty"`
	// WaitMS bounds the wait for the app's first window.
	WaitMS int `json:"wait_ms,omitempty"`
}

type pointArgs struct {
	X      int    `json:"x"`
	Y      int    `json:"y"`
	Button string `json:"button,omitempty"` // left, middle, right
	Clicks int    `json:"clicks,omitempty"` // 1, 2 (double), 3 (triple)
}

type dragArgs struct {
	X      int    `json:"x"`
	Y      int    `json:"y"`
	ToX    int    `json:"to_x"`
	ToY    int    `json:"to_y"`
	Button string `json:"button,omitempty"`
}

type scrollArgs struct {
	X         int    `json:"x"`
	Y         int    `json:"y"`
	Direction string `json:"direction"` // up, down, left, right
	Amount    int    `json:"amount,omitempty"`
}

type typeArgs struct {
	Text string `json:"text"`
}

type keyArgs struct {
	Keys string `json:"keys"` // xdotool key names: "ctrl+s", "Return", "ctrl+shift+t Tab"
}

type waitArgs struct {
	Title     string `json:"title"` // an RE2 pattern
	TimeoutMS int    `json:"timeout_ms,omitempty"`
}

// Results.
type shotResult struct {
	PNG    []byte `json:"png"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
}

type cursorResult struct {
	X int `json:"x"`
	Y int `json:"y"`
}

// Window is one mapped window of the desktop.
type Window struct {
	ID     int    `json:"id"`
	Title  string `json:"title"`
	X      int    `json:"x"`
	Y      int    `json:"y"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
}

type launchResult struct {
	PID     int      `json:"pid"`
	Windows []Window `json:"windows"`
	// NoWindow says the wait for a window ended without one (the app may draw none).
	NoWindow bool `json:"no_window,omitempty"`
}

// readLine reads one line of at most max bytes; a longer one is read to its end and
// returned empty with an error.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) <= max {
			line = append(line, chunk...)
		} else {
			line = nil
			max = -1
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if max < 0 && err == nil {
			return nil, nil
		}
		return line, err
	}
}

func lastLines(s string, max int) string {
	if len(s) > max {
		s = "..." + s[len(s)-max:]
	}
	return s
}
