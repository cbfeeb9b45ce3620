//go:build !linux

package zkserver

import "time"

func preciseThread() (release func()) { return func() {} }

// sleepUntil returns at t, as precisely as the runtime's timers allow.
func sleepUntil(t time.Time) {
	if d := time.Until(t); d > 0 {
		time.Sleep(d)
	}
}
