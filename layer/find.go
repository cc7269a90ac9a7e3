package layer

// Find returns the live layer of s with the given ID as a T (looked up
// with [As], so a wrapped layer is found too): the typed way for code
// handed a run's stack (an agentloop tool, for instance) to reach one of
// the run's layers. ok is false when s has no enabled layer of that ID,
// it is not initialised yet, or the layer is not a T.
func Find[T any](s *Stack, id string) (T, bool) {
	l, ok := s.layer(id)
	if !ok {
		var zero T
		return zero, false
	}
	return As[T](l)
}
