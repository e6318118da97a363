package calc

// deprecated is removed in the new version.
func deprecated() {}
