package storagetest

import (
	"context"
	"sync"

	"github.com/memlayer/memlayer/storage"
)

// ReadCounter is an in-memory store that counts its reads: each Get and
// each GetMany is what one round trip to a server (or one statement on
// SQLite) would be. Hide its GetMany to count a store without
// [storage.MultiGetter]: struct{ storage.Store }{c} (which hides its
// search too). Its zero value is not usable; call [NewReadCounter].
type ReadCounter struct {
	*storage.Memory
	mu          sync.Mutex
	gets, manys int
}

// NewReadCounter returns an empty ReadCounter.
func NewReadCounter() *ReadCounter { return &ReadCounter{Memory: storage.NewMemory()} }

// Get implements [storage.Store], counted.
func (c *ReadCounter) Get(ctx context.Context, key string) (storage.Item, error) {
	c.mu.Lock()
	c.gets++
	c.mu.Unlock()
	return c.Memory.Get(ctx, key)
}

// GetMany implements [storage.MultiGetter], counted.
func (c *ReadCounter) GetMany(ctx context.Context, keys []string) ([]storage.Item, error) {
	c.mu.Lock()
	c.manys++
	c.mu.Unlock()
	return c.Memory.GetMany(ctx, keys)
}

// Reads returns the Gets and GetManys counted since the last Reset.
func (c *ReadCounter) Reads() (gets, manys int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gets, c.manys
}

// Reset sets the counts to zero.
func (c *ReadCounter) Reset() {
	c.mu.Lock()
	c.gets, c.manys = 0, 0
	c.mu.Unlock()
}
