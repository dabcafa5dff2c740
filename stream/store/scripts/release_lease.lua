-- release_lease: give up a ladder's phase-one lease if ARGV[1] still holds it (another owner's
-- lease, taken after this one lapsed, is left alone). The fence is kept: its token stays valid
-- for the owner until another one takes the lease.
-- KEYS[1] lease   ems:lease:{L}
-- ARGV[1] owner
-- Returns 1 if released, 0 if the lease was not this owner's.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
