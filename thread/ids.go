package thread

import (
	"errors"
	"fmt"

	"github.com/memlayer/memlayer/storage"
)

// MaxIDLen is the longest thread or resource ID accepted, in bytes.
// A key holds an ID escaped, up to three bytes for one, next to the
// other ID and a layer's name, within storage.MaxKeyLen.
const MaxIDLen = 512

// ErrInvalidID means a thread or resource ID is empty where one is
// needed, or longer than MaxIDLen.
var ErrInvalidID = errors.New("thread: invalid ID")

// CheckIDs refuses a thread or resource ID longer than MaxIDLen with
// ErrInvalidID. Empty IDs pass.
func CheckIDs(threadID, resourceID string) error {
	if len(threadID) > MaxIDLen {
		return fmt.Errorf("%w: thread ID %s is %d bytes, more than MaxIDLen (%d)", ErrInvalidID, storage.Quote(threadID), len(threadID), MaxIDLen)
	}
	if len(resourceID) > MaxIDLen {
		return fmt.Errorf("%w: resource ID %s is %d bytes, more than MaxIDLen (%d)", ErrInvalidID, storage.Quote(resourceID), len(resourceID), MaxIDLen)
	}
	return nil
}

// CheckThreadID refuses an empty thread ID and one longer than MaxIDLen
// with ErrInvalidID.
func CheckThreadID(threadID string) error {
	if threadID == "" {
		return fmt.Errorf("%w: empty thread ID", ErrInvalidID)
	}
	return CheckIDs(threadID, "")
}

// CheckResourceID refuses an empty resource ID and one longer than
// MaxIDLen with ErrInvalidID.
func CheckResourceID(resourceID string) error {
	if resourceID == "" {
		return fmt.Errorf("%w: empty resource ID", ErrInvalidID)
	}
	return CheckIDs("", resourceID)
}
