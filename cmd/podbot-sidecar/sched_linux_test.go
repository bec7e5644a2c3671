//go:build linux

package main

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// policyOf reads the scheduling policy of a thread or process from
// /proc/<path>/stat (field 41).
func policyOf(t *testing.T, stat string) int {
	t.Helper()
	// The command name (field 2) may hold spaces; fields resume after ')'.
	f := strings.Fields(stat[strings.LastIndexByte(stat, ')')+1:])
	if len(f) < 39 {
		t.Fatalf("short stat line %q", stat)
	}
	p, err := strconv.Atoi(f[38])
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// niceOf returns the nice value (field 19) of a /proc stat line.
func niceOf(t *testing.T, stat string) string {
	t.Helper()
	f := strings.Fields(stat[strings.LastIndexByte(stat, ')')+1:])
	if len(f) < 17 {
		t.Fatalf("short stat line %q", stat)
	}
	return f[16]
}

// TestSetBatch runs setBatch in a child test process (it changes the
// scheduling of every thread it runs in) and checks that the threads there
// before, a thread started after and a command started after all run under
// SCHED_BATCH, with their nice value kept.
func TestSetBatch(t *testing.T) {
	if os.Getenv("PODBOT_SIDECAR_TEST_BATCH") == "1" {
		batchChild(t)
		return
	}
	// The child starts 5 above this process's nice value: SCHED_BATCH must
	// keep it, not reset it.
	cmd := exec.Command("nice", "-n", "5", os.Args[0], "-test.run", "^TestSetBatch$", "-test.v")
	cmd.Env = append(os.Environ(), "PODBOT_SIDECAR_TEST_BATCH=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestSetBatch") {
		t.Fatalf("the child test failed: %v\n%s", err, out)
	}
}

// batchChild is TestSetBatch inside the child process.
func batchChild(t *testing.T) {
	self, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	want := niceOf(t, string(self))
	if err := setBatch(); err != nil {
		t.Fatalf("setBatch: %v", err)
	}
	// A thread started afterwards: lock goroutines to threads so the
	// runtime has to start new ones.
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			attr, err := unix.SchedGetAttr(0, 0)
			if err != nil || attr.Policy != unix.SCHED_BATCH {
				t.Errorf("a thread started after setBatch: %+v, %v", attr, err)
			}
		}()
	}
	wg.Wait()
	entries, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		stat, err := os.ReadFile("/proc/self/task/" + e.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		if p := policyOf(t, string(stat)); p != unix.SCHED_BATCH {
			t.Errorf("thread %s runs under policy %d, want SCHED_BATCH (%d)", e.Name(), p, unix.SCHED_BATCH)
		}
		if n := niceOf(t, string(stat)); n != want {
			t.Errorf("thread %s has nice %s, want the %s it started with", e.Name(), n, want)
		}
	}
	out, err := exec.Command("cat", "/proc/self/stat").Output()
	if err != nil {
		t.Fatal(err)
	}
	if p := policyOf(t, string(out)); p != unix.SCHED_BATCH {
		t.Errorf("a command started by a batch thread runs under policy %d, want SCHED_BATCH", p)
	}
}
