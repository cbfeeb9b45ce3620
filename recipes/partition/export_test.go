package partition

import "github.com/zkrecipes/zkrecipes/recipes/group"

// SetJoinedHook sets the hook run between joining the party and listening
// to it (nil: none). Tests using it must not run in parallel.
func SetJoinedHook(f func(*group.Group)) { joinedHook = f }
