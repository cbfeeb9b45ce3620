package barrier

// hooks let tests wake a wait for no reason, as a spurious wake-up would,
// and learn when a wait checks the server. Both are nil outside tests.
type hooks struct {
	// wake wakes a waiting Wait, Enter or Leave, which then checks the
	// server again as after any wake-up.
	wake chan struct{}
	// checked is called each time a wait is about to read the server.
	checked func()
}

func (h *hooks) check() {
	if h != nil && h.checked != nil {
		h.checked()
	}
}

// wakeUp is nil (never ready) outside tests.
func (h *hooks) wakeUp() <-chan struct{} {
	if h == nil {
		return nil
	}
	return h.wake
}
