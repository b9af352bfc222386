package stores

// KeyCacheLen is the number of stores the secret-key cache of s holds in
// the current epoch.
func KeyCacheLen(s *Service) int { return s.bySecret.len() }
