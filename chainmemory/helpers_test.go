package chainmemory_test

import (
	"context"
	"strings"
)

type upper struct{}

func (upper) Name() string        { return "upper" }
func (upper) Description() string { return "Upper-cases its input." }
func (upper) Call(_ context.Context, s string) (string, error) {
	return strings.ToUpper(s), nil
}
