package identity

import "time"

// SetReload sets how long k serves its cached keys before reloading them
// (30 s in production), so tests need not wait for a reload.
func SetReload(k *Keyring, d time.Duration) { k.reload = d }
