package io.pgjobs;

import java.util.UUID;

/**
 * A job another job waits for or waited for ({@link JobGraph}), as {@link JobClient#parents} reads it.
 *
 * @param id the parent's id
 * @param type its job type
 * @param onFailure what the child does if it fails: its {@link Dependency}'s policy
 * @param state how it ended ({@link JobState#SUCCEEDED}, {@link JobState#FAILED} or
 *     {@link JobState#CANCELLED}), or null while it has not
 * @param output its output as JSON text if it succeeded with one, else null
 */
public record JobParent(
    UUID id, String type, Dependency.OnFailure onFailure, JobState state, String output) {}
