//go:build labrun_regress_resend

package regress

// Retries is added to the business retries of every call (client.Client.Do).
const Retries = 1
