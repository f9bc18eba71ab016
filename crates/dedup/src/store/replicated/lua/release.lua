-- Releases a lease or a turn of this process (`ReplicatedStore::release_lease`
-- and `SnapshotJob::run` in ../../replicated.rs): deletes KEYS[1] if it
-- holds ARGV[1]. Runs alone (without log_fns.lua).
--
-- KEYS[1]: the lease or turn key. ARGV[1]: this process's token.
--
-- Returns 1 when deleted, 0 when it held something else (or nothing).

if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
