package client

import (
	"errors"
	"syscall"
)

// The JDK HttpClient's connect rules (rules.JDK, java.net.http in JDK 17): a request
// timeout that fires during the name lookup takes effect when the lookup returns, and a refused
// connect is connected again once.

// lookupStarts marks a lookup under way: a cancellation meanwhile is held (holdCancel).
func (st *attemptState) lookupStarts() {
	st.mu.Lock()
	st.lookingUp = true
	st.mu.Unlock()
}

// holdCancel keeps cause for the end of the lookup under way, if there is one (rules.Connect.TimerLateInLookup),
// and reports whether it did.
func (st *attemptState) holdCancel(cause error) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.lookingUp || !st.cfg.Rules.Connect.TimerLateInLookup {
		return false
	}
	st.held = cause
	return true
}

// lookupDone ends the lookup under way and applies the cancellation held meanwhile, which it
// returns (nil: none).
func (st *attemptState) lookupDone() error {
	st.mu.Lock()
	st.lookingUp = false
	held := st.held
	st.held = nil
	st.mu.Unlock()
	if held != nil {
		st.cancel(held)
	}
	return held
}

// jdkConnectRetry reports whether err is what the JDK sees as a ConnectException on a connect:
// refused, or given up by the kernel (sun.nio.ch.Net: ECONNREFUSED and ETIMEDOUT).
func jdkConnectRetry(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ETIMEDOUT)
}
