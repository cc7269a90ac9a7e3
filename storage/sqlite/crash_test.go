package sqlite_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/sqlite"
)

// record is a self-checking value: 8 bytes of sequence number, a body
// derived from it, and the SHA-256 of both. A torn write cannot verify.
func record(seq uint64, size int) []byte {
	b := make([]byte, 8, size+8+sha256.Size)
	binary.BigEndian.PutUint64(b, seq)
	for len(b) < size+8 {
		b = append(b, byte(seq+uint64(len(b))*31))
	}
	sum := sha256.Sum256(b)
	return append(b, sum[:]...)
}

func checkRecord(v []byte) (uint64, error) {
	if len(v) < 8+sha256.Size {
		return 0, fmt.Errorf("record of %d bytes", len(v))
	}
	body, sum := v[:len(v)-sha256.Size], v[len(v)-sha256.Size:]
	want := sha256.Sum256(body)
	if !bytes.Equal(sum, want[:]) {
		return 0, errors.New("checksum mismatch: torn value")
	}
	return binary.BigEndian.Uint64(body), nil
}

// TestCrashLeavesOldOrNew kills (SIGKILL) a process in the middle of a
// stream of writes, then checks that the file opens and every value is
// whole, several times over.
func TestCrashLeavesOldOrNew(t *testing.T) {
	const keys = 8
	if path := os.Getenv("MEMLAYER_SQLITE_CRASH_PATH"); path != "" {
		// Child: write forever, 16-64 KB values, until killed.
		ctx := context.Background()
		s, err := sqlite.Open(ctx, sqlite.Config{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Println("ready")
		for seq := uint64(1); ; seq++ {
			k := "crash/" + strconv.Itoa(int(seq%keys))
			if _, err := s.Put(ctx, k, record(seq, 16<<10+int(seq%4)*(16<<10)), storage.AnyVersion); err != nil {
				t.Fatal(err)
			}
		}
	}
	if testing.Short() {
		t.Skip("short mode")
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	const trials = 4
	for trial := range trials {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashLeavesOldOrNew$", "-test.count=1")
		cmd.Env = append(os.Environ(), "MEMLAYER_SQLITE_CRASH_PATH="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil || line != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child did not start: %q, %v", line, err)
		}
		time.Sleep(time.Duration(100+trial*70) * time.Millisecond)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()

		s, err := sqlite.Open(t.Context(), sqlite.Config{Path: path})
		if err != nil {
			t.Fatalf("trial %d: Open after SIGKILL: %v", trial, err)
		}
		list, err := s.List(t.Context(), "crash/")
		if err != nil {
			t.Fatalf("trial %d: List: %v", trial, err)
		}
		if len(list) == 0 {
			t.Fatalf("trial %d: no value survived; the child wrote nothing?", trial)
		}
		var newest uint64
		for _, k := range list {
			it, err := s.Get(t.Context(), k)
			if err != nil {
				t.Fatalf("trial %d: Get(%q): %v", trial, k, err)
			}
			seq, err := checkRecord(it.Value)
			if err != nil {
				t.Fatalf("trial %d: %q: %v", trial, k, err)
			}
			newest = max(newest, seq)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("trial %d: killed after about %d writes; all %d values whole", trial, newest, len(list))
	}
}
