//! Plugin loading, trust and reach (`docs/security.md`).
//!
//! One test binary, one module per concern, so the crates link once
//! (#21 item 7); each module's own doc says what it checks.

mod check_sources;
mod hostile;
mod load;
mod reach;
mod trust;
mod trust_hostile;

/// Every hostile test component (`tests/hostile-plugins/*/`) with the tests
/// here that load it. `foreach_hostile_plugin!` (from `tests/build.rs`,
/// which lists that folder) calls this once per component, so a component
/// added without an arm, or an arm naming a test that is gone, fails to
/// compile.
macro_rules! tested_by {
    (chatty, $folder:literal) => {
        tested_by!(@ hostile::a_plugin_printing_100_mib_still_loads);
    };
    (deep_recursion, $folder:literal) => {
        tested_by!(@ hostile::deep_recursion_overflows_the_guest_stack);
    };
    (env_leak, $folder:literal) => {
        tested_by!(@
            reach::a_plugin_gets_no_host_variable_unless_the_user_grants_it,
            reach::plugin_files_that_leave_their_folder_or_are_not_regular_are_refused_by_name
        );
    };
    (extra_import, $folder:literal) => {
        tested_by!(@ hostile::an_import_outside_the_world_is_refused_naming_it);
    };
    (huge_manifest, $folder:literal) => {
        tested_by!(@ hostile::a_50_mib_manifest_is_refused_by_size);
    };
    (infinite_loop, $folder:literal) => {
        tested_by!(@
            hostile::an_infinite_loop_in_manifest_hits_the_epoch_deadline,
            hostile::an_infinite_loop_in_a_probe_hits_the_probe_deadline
        );
    };
    (memory_bomb, $folder:literal) => {
        tested_by!(@ hostile::a_memory_bomb_hits_the_memory_limit);
    };
    (mistakes, $folder:literal) => {
        tested_by!(@ check_sources::the_same_mistakes_give_the_same_errors_from_python_rust_and_yaml);
    };
    (other_version, $folder:literal) => {
        tested_by!(@ hostile::another_contract_version_is_refused_naming_both);
    };
    (probe, $folder:literal) => {
        tested_by!(@
            hostile::a_custom_probe_reads_its_grant,
            hostile::a_probe_cannot_leave_its_grant,
            hostile::a_probe_is_bounded_in_bytes_and_entries
        );
    };
    (trap, $folder:literal) => {
        tested_by!(@
            hostile::a_panic_in_manifest_is_a_trap,
            hostile::a_panic_in_a_probe_is_a_trap_and_the_plugin_probes_again
        );
    };
    (@ $($test:path),+) => {
        const _: &[fn()] = &[$($test),+];
    };
}
wasmgate_conformance::foreach_hostile_plugin!(tested_by);
