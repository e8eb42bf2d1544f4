// Command interleave times whole commands in turn, round after round
// (A B C, A B C, ...), so a drift in the machine's speed hits every command
// alike, and reports each command's median and the median of the per-round
// ratios of the first command to each other one. `make bench` uses it to
// compare `jail run -- /bin/true` with bare /bin/true and bubblewrap.
//
// With -less LETTER it also reports the per-round ratio of A's time less
// that command's to B's: with A a command in jail, B the same bare and
// LETTER `jail run -- /bin/true` in the same workspace, the command's own
// work inside against bare, without jail's fixed cost of a run.
//
// usage: interleave [-n ROUNDS] [-warmup N] [-ref LETTER] [-less LETTER] -- 'CMD A' 'CMD B' ...
// (a command may start with NAME=VALUE words, which set its environment)
// Each command is one string split on spaces (no shell).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"time"
)

func main() {
	os.Exit(run())
}

func run() int {
	rounds := flag.Int("n", 50, "counted rounds")
	warmup := flag.Int("warmup", 5, "rounds run first and not counted")
	ref := flag.String("ref", "", "also report every command's per-round ratio to this `LETTER`'s (e.g. C)")
	less := flag.String("less", "", "also report the per-round ratio of A's time less this `LETTER`'s to B's (e.g. C)")
	flag.Parse()
	cmds := flag.Args()
	if len(cmds) < 2 || *rounds < 1 {
		fmt.Fprintln(os.Stderr, "usage: interleave [-n ROUNDS] [-warmup N] -- 'CMD A' 'CMD B' ...")
		return 2
	}
	times := make([][]float64, len(cmds))
	rss := make([]int64, len(cmds))
	for r := 0; r < *warmup+*rounds; r++ {
		for i, c := range cmds {
			d, maxrss, err := once(c)
			if err != nil {
				fmt.Fprintf(os.Stderr, "interleave: %s: %v\n", c, err)
				return 1
			}
			if r < *warmup {
				continue
			}
			times[i] = append(times[i], d)
			if maxrss > rss[i] {
				rss[i] = maxrss
			}
		}
	}
	fmt.Printf("%d rounds after %d warm-up rounds, commands in turn\n", *rounds, *warmup)
	fmt.Printf("%-8s %10s %10s %10s %12s  %s\n", "", "median", "mean", "p90", "peak RSS", "command")
	for i, c := range cmds {
		s := append([]float64(nil), times[i]...)
		sort.Float64s(s)
		fmt.Printf("%-8s %8.2fms %8.2fms %8.2fms %9d KiB  %s\n", string(rune('A'+i)), s[len(s)/2], mean(s), s[len(s)*9/10], rss[i], c)
	}
	for j := 1; j < len(cmds); j++ {
		printRatio(times, 0, j)
	}
	if len(*ref) == 1 {
		if k := int((*ref)[0] - 'A'); k > 0 && k < len(cmds) {
			for i := 1; i < len(cmds); i++ {
				if i != k {
					printRatio(times, i, k)
				}
			}
		}
	}
	if len(*less) == 1 {
		if k := int((*less)[0] - 'A'); k > 1 && k < len(cmds) {
			var ratios []float64
			for r := range times[0] {
				ratios = append(ratios, (times[0][r]-times[k][r])/times[1][r])
			}
			sort.Float64s(ratios)
			fmt.Printf("(A-%c)/B per-round ratio: median %.2fx (p10 %.2fx, p90 %.2fx)\n", 'A'+k, ratios[len(ratios)/2], ratios[len(ratios)/10], ratios[len(ratios)*9/10])
		}
	}
	return 0
}

// printRatio prints the median (and p10, p90) of the per-round ratios of
// command i's time to command j's.
func printRatio(times [][]float64, i, j int) {
	var ratios []float64
	for k := range times[i] {
		ratios = append(ratios, times[i][k]/times[j][k])
	}
	sort.Float64s(ratios)
	fmt.Printf("%c/%c per-round ratio: median %.2fx (p10 %.2fx, p90 %.2fx)\n", 'A'+i, 'A'+j, ratios[len(ratios)/2], ratios[len(ratios)/10], ratios[len(ratios)*9/10])
}

// once runs c to completion and returns its wall time in milliseconds and
// its peak RSS (the largest process waited for, in KiB).
func once(c string) (float64, int64, error) {
	// Leading NAME=VALUE words set variables for this command only, as
	// in a shell.
	f := strings.Fields(c)
	var env []string
	for len(f) > 1 && strings.Contains(f[0], "=") && !strings.HasPrefix(f[0], "/") {
		env = append(env, f[0])
		f = f[1:]
	}
	cmd := exec.Command(f[0], f[1:]...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		return 0, 0, err
	}
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	var maxrss int64
	if ru != nil {
		maxrss = ru.Maxrss
	}
	return float64(d.Microseconds()) / 1000, maxrss, nil
}

func mean(s []float64) float64 {
	t := 0.0
	for _, v := range s {
		t += v
	}
	return t / float64(len(s))
}
