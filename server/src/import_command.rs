//! `bulkq import people FILE.csv`: the CSV import from a shell. The file is stored in the
//! database a chunk at a time and previewed; then (unless `--dry-run`) it is imported by a
//! queue task, as from the dashboard, which this command runs on a queue runtime of its own
//! and follows until it ends. A serve node sharing the database may take the task instead;
//! either way it runs once, and if this command is killed, a node's rescuer finishes it.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail};
use bulkq_types::TaskStatus;
use bulkq_types::actions::PEOPLE_IMPORT;
use caseload::actions::executors_for_import;
use caseload::export::defuse_formula;
use caseload::people_import::preview::{ImportPreview, preview};
use caseload::people_import::upload::{
    CHUNK_BYTES, Upload, begin_upload, delete_upload, find_upload, finish_upload, store_chunk,
};
use caseload::people_import::{ImportProgress, ImportSpec, problems_after};
use caseload::users::Role;
use caseload::users::accounts::find_account;
use queue::{NewTask, Registry, Runtime, RuntimeConfig, Store};
use sea_orm::{DatabaseConnection, TransactionTrait};

use crate::commands::open_database;
use crate::config::ImportPeopleArgs;

/// How often the command reports the import's progress.
const PROGRESS_EVERY: Duration = Duration::from_secs(2);

/// Runs `import people`.
pub async fn import_people(database_url: &str, args: ImportPeopleArgs) -> anyhow::Result<()> {
    let db = open_database(database_url, queue::database::DEFAULT_MAX_CONNECTIONS).await?;
    let admin = find_account(&db, &args.as_user).await?;
    if admin.role != Role::Admin || admin.disabled_at.is_some() {
        bail!(
            "{:?} is not an enabled admin: imports run as one",
            admin.username
        );
    }
    let upload = store_file(&db, admin.id, &args.file, args.max_bytes).await?;
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
    let spec = ImportSpec {
        upload_id: upload.id,
        file_name: upload.file_name.clone(),
        mapping: preview.mapping.clone(),
        full_sync: args.full_sync,
        first_row: preview.first_row,
        rows: preview.rows,
    };
    let task_id = run_import(&db, &spec, admin.id, &admin.username, args.batch_size).await?;
    println!("Import task {task_id} finished.");
    if let Some(report) = args.report {
        let written = write_report(&db, upload.id, &report).await?;
        println!("{written} problem rows written to {}.", report.display());
    }
    Ok(())
}

/// Stores the file in the database a chunk at a time, each chunk in its own transaction.
async fn store_file(
    db: &DatabaseConnection,
    user_id: uuid::Uuid,
    path: &Path,
    max_bytes: u64,
) -> anyhow::Result<Upload> {
    let mut file =
        std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let size = file.metadata()?.len();
    if size > max_bytes {
        bail!(
            "{} is {size} bytes, over the limit of {max_bytes} (--max-bytes)",
            path.display()
        );
    }
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let upload_id = begin_upload(db, user_id, &name).await?;
    let mut seq = 0;
    loop {
        let mut chunk = Vec::with_capacity(CHUNK_BYTES);
        (&mut file)
            .take(CHUNK_BYTES as u64)
            .read_to_end(&mut chunk)
            .with_context(|| format!("reading {}", path.display()))?;
        if chunk.is_empty() {
            break;
        }
        let txn = db.begin().await?;
        store_chunk(&txn, upload_id, seq, chunk).await?;
        txn.commit().await?;
        seq += 1;
    }
    finish_upload(db, upload_id).await?;
    find_upload(db, upload_id)
        .await?
        .context("the upload vanished while it was stored")
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
    db: &DatabaseConnection,
    spec: &ImportSpec,
    admin_id: uuid::Uuid,
    admin_name: &str,
    batch_size: u64,
) -> anyhow::Result<uuid::Uuid> {
    let store = Store::new(db.clone());
    let mut txn = store.begin_queue().await?;
    let task = NewTask::new(PEOPLE_IMPORT, serde_json::to_value(spec)?, admin_id)
        .with_created_by(admin_name)
        .with_progress_total(i64::try_from(spec.rows).unwrap_or(i64::MAX));
    let task_id = txn.enqueue(task).await?.id;
    txn.commit().await?;
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

/// Writes the import's problems as CSV (line, school_id, problem), a page at a time.
async fn write_report(
    db: &DatabaseConnection,
    import_id: uuid::Uuid,
    path: &Path,
) -> anyhow::Result<u64> {
    let mut writer =
        csv::Writer::from_path(path).with_context(|| format!("creating {}", path.display()))?;
    writer.write_record(["line", "school_id", "problem"])?;
    let (mut after, mut written) = (0, 0);
    loop {
        let page = problems_after(db, import_id, after, 1_000).await?;
        let Some(last) = page.last() else { break };
        after = last.line;
        for problem in &page {
            writer.write_record([
                problem.line.to_string(),
                defuse_formula(problem.school_id.clone().unwrap_or_default()),
                defuse_formula(problem.message.clone()),
            ])?;
            written += 1;
        }
    }
    writer.flush()?;
    Ok(written)
}
