package client

import (
	"errors"
	"syscall"
)

// The JDK HttpClient's connect rules (java.net.http, JDK 17): a timeout during the name lookup
// takes effect when it returns; a refused connect is retried once.

// lookupStarts marks a lookup under way.
func (st *attemptState) lookupStarts() {
	st.mu.Lock()
	st.lookingUp = true
	st.mu.Unlock()
}

// holdCancel keeps cause for the end of a lookup under way (rules.Connect.TimerLateInLookup)
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

// lookupDone ends the lookup and applies and returns the held cancellation (nil: none).
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

// jdkConnectRetry reports whether the JDK sees err as a ConnectException: refused or ETIMEDOUT
// (sun.nio.ch.Net).
func jdkConnectRetry(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ETIMEDOUT)
}
