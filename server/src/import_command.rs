//! `bulkq import people FILE.csv`: the CSV import from a shell. The file is stored in the
//! database a chunk at a time and previewed; then (unless `--dry-run`) it is imported by a
//! queue task, as from the dashboard, which this command runs on a queue runtime of its own
//! and follows until it ends. A serve node sharing the database may take the task instead;
//! either way it runs once, and if this command is killed, a node's rescuer finishes it.

use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail};
use bulkq_types::TaskStatus;
use bulkq_types::audit::COMMAND_LINE;
use caseload::actions::executors_for_import;
use caseload::audit::Actor;
use caseload::people_import::preview::preview;
use caseload::people_import::report::{REPORT_HEADER, report_page};
use caseload::people_import::start::start_import;
use caseload::people_import::upload::{CHUNK_BYTES, Upload, UploadWriter, delete_upload};
use caseload::people_import::{ImportPreview, ImportProgress, ImportSpec};
use caseload::users::Role;
use caseload::users::accounts::find_account;
use queue::{Registry, Runtime, RuntimeConfig, Store};

use crate::config::ImportPeopleArgs;
use crate::database_target::DatabaseTarget;

/// How often the command reports the import's progress.
const PROGRESS_EVERY: Duration = Duration::from_secs(2);

/// Runs `import people`.
pub async fn import_people(
    database: &DatabaseTarget,
    args: ImportPeopleArgs,
) -> anyhow::Result<()> {
    crate::memory::give_large_blocks_back();
    let db = database
        .open(queue::database::DEFAULT_MAX_CONNECTIONS)
        .await?;
    let admin = find_account(&db, &args.as_user).await?;
    if admin.role != Role::Admin || admin.disabled_at.is_some() {
        bail!(
            "{:?} is not an enabled admin: imports run as one",
            admin.username
        );
    }
    let store = Store::new(db.clone());
    let upload = store_file(&store, admin.id, &args.file, args.max_bytes).await?;
    let preview = preview(&db, &upload, None, args.full_sync).await;
    let preview = match preview {
        Ok(preview) => preview,
        Err(error) => {
            delete_upload(&db, upload.id).await?;
            return Err(error.into());
        }
    };
    print_preview(&preview, args.full_sync);
    if !preview.mapping_problems.is_empty() || args.dry_run {
        delete_upload(&db, upload.id).await?;
        if !preview.mapping_problems.is_empty() {
            bail!("the file's columns do not name every required field (see above)");
        }
        println!("Dry run: nothing was changed.");
        return Ok(());
    }
    let spec = ImportSpec::of(&upload, &preview, args.full_sync);
    let task_id = run_import(&store, &spec, admin.id, &admin.username, args.batch_size).await?;
    println!("Import task {task_id} finished.");
    if let Some(report) = args.report {
        let written = write_report(&store, upload.id, &report).await?;
        println!("{written} problem rows written to {}.", report.display());
    }
    Ok(())
}

/// Stores the file in the database a chunk at a time.
async fn store_file(
    store: &Store,
    user_id: uuid::Uuid,
    path: &Path,
    max_bytes: u64,
) -> anyhow::Result<Upload> {
    let mut file =
        std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut writer = UploadWriter::begin(store, user_id, &name, max_bytes).await?;
    let mut buffer = vec![0; CHUNK_BYTES];
    let stored = async {
        loop {
            let read = file
                .read(&mut buffer)
                .with_context(|| format!("reading {}", path.display()))?;
            if read == 0 {
                return anyhow::Ok(());
            }
            writer
                .write(store, &buffer[..read])
                .await
                .with_context(|| format!("{} (--max-bytes)", path.display()))?;
        }
    }
    .await;
    if let Err(error) = stored {
        delete_upload(store.db(), writer.id()).await?;
        return Err(error);
    }
    Ok(writer.finish(store).await?)
}

fn print_preview(preview: &ImportPreview, full_sync: bool) {
    println!("Columns:");
    for (field, _) in bulkq_types::people_import::FIELDS {
        let column = preview
            .mapping
            .get(field)
            .and_then(|column| Some((column, preview.header.get(column)?)));
        match column {
            Some((number, name)) => println!("  {field:<15} column {} ({name:?})", number + 1),
            None => println!("  {field:<15} -"),
        }
    }
    for (field, problem) in &preview.mapping_problems {
        println!("  ! {field}: {problem}");
    }
    if !preview.mapping_problems.is_empty() {
        return;
    }
    println!("First rows:");
    for row in &preview.first_rows {
        println!("  {}", row.join(" | "));
    }
    let counts = preview.counts;
    println!(
        "{} rows: {} to create, {} to change, {} unchanged{}, {} with problems.",
        preview.rows,
        counts.created,
        counts.changed,
        counts.unchanged,
        if full_sync {
            format!(", {} to retire (not in the file)", counts.retired)
        } else {
            String::new()
        },
        preview.problem_count
    );
    for problem in &preview.problems {
        println!("  line {}: {}", problem.line, problem.message);
    }
    if preview.problem_count > preview.problems.len() as u64 {
        println!(
            "  … and {} more",
            preview.problem_count - preview.problems.len() as u64
        );
    }
}

/// Enqueues the import and runs it on a runtime of this process until it ends.
async fn run_import(
    store: &Store,
    spec: &ImportSpec,
    admin_id: uuid::Uuid,
    admin_name: &str,
    batch_size: u64,
) -> anyhow::Result<uuid::Uuid> {
    let by = Actor::staff(admin_id, admin_name, COMMAND_LINE);
    let task_id = start_import(store, &by, spec).await?.id;
    let mut registry = Registry::new();
    executors_for_import(&mut registry, batch_size);
    let runtime = Runtime::start(
        RuntimeConfig {
            system_id: format!("bulkq-import-{}", std::process::id()),
            workers: 1,
            ..RuntimeConfig::default()
        },
        store.clone(),
        registry,
    )
    .await?;
    let task = loop {
        tokio::time::sleep(PROGRESS_EVERY).await;
        let task = store
            .task_get(task_id)
            .await?
            .context("the import task vanished")?;
        let progress = ImportProgress::of(&task.execution_state);
        println!(
            "  {} of {} rows: {} created, {} changed, {} unchanged, {} retired, {} problems",
            progress.rows,
            spec.rows,
            progress.counts.created,
            progress.counts.changed,
            progress.counts.unchanged,
            progress.counts.retired,
            progress.problems
        );
        if task.workflow_status.is_terminal() {
            break task;
        }
    };
    runtime.shutdown(Duration::from_secs(10)).await;
    if task.workflow_status != TaskStatus::Completed {
        bail!(
            "the import ended {}: {}",
            task.workflow_status.as_str(),
            task.workflow_status_desc.unwrap_or_default()
        );
    }
    Ok(task_id)
}

/// Writes the import's error report to `path`; returns how many rows it holds.
async fn write_report(store: &Store, import_id: uuid::Uuid, path: &Path) -> anyhow::Result<u64> {
    let mut file = std::io::BufWriter::new(
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
    );
    file.write_all(REPORT_HEADER)?;
    let (mut after, mut written) = (0, 0);
    while let Some(page) = report_page(store.db(), import_id, after).await? {
        file.write_all(&page.csv)?;
        written += page.rows;
        after = page.last_line;
    }
    file.flush()?;
    Ok(written)
}
