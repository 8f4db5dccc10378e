use bulkq_types::export::ExportColumn;
use bulkq_types::filter::PersonFilter;
use caseload::CaseloadError;
use caseload::export::{CsvExport, ExportOptions};
use caseload::search::people_after;
use caseload::seed::{SeedOptions, seed_people};
use caseload::store::entity::person;
use caseload::users::Role;
use chrono::Utc;
use migration::Migrator;
use queue::testing::TestDatabase;
use uuid::Uuid;

use crate::helpers::actor;

queue::backend_tests!(Migrator => thousands_of_rows_in_batches_with_a_resume);

fn person(first: &str, last: &str, email: Option<&str>) -> person::Model {
    person::Model {
        id: Uuid::nil(),
        school_id: "S1".into(),
        first_name: first.into(),
        last_name: last.into(),
        email: email.map(str::to_owned),
        program_status: "ACTIVE".into(),
        coach_id: None,
        updated_by: None,
        updated_at: Utc::now(),
    }
}

fn names_and_email() -> ExportOptions {
    ExportOptions {
        columns: vec![
            ExportColumn::FirstName,
            ExportColumn::LastName,
            ExportColumn::Email,
        ],
        row_cap: 10,
    }
}

#[test]
fn cells_are_quoted_and_formulas_defused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("people.csv");
    let mut export = CsvExport::open(&path, names_and_email(), None).unwrap();
    export
        .write_people(&[
            person("Zoë", "O'Brien, Jr.", Some("zoe@example.edu")),
            person("=HYPERLINK(\"x\")", "+1", None),
            person("Line\nbreak", "@SUM", Some("-x@example.edu")),
        ])
        .unwrap();
    export.checkpoint().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        text,
        "first_name,last_name,email\n\
         Zoë,\"O'Brien, Jr.\",zoe@example.edu\n\
         \"'=HYPERLINK(\"\"x\"\")\",'+1,\n\
         \"Line\nbreak\",'@SUM,'-x@example.edu\n"
    );
}

#[test]
fn options_are_checked_and_the_cap_holds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("capped.csv");
    for bad in [
        ExportOptions {
            columns: vec![],
            row_cap: 1,
        },
        ExportOptions {
            columns: vec![ExportColumn::Email, ExportColumn::Email],
            row_cap: 1,
        },
        ExportOptions {
            row_cap: 0,
            ..names_and_email()
        },
    ] {
        assert!(matches!(
            CsvExport::open(&path, bad, None),
            Err(CaseloadError::Invalid(_))
        ));
    }
    let mut export = CsvExport::open(
        &path,
        ExportOptions {
            row_cap: 2,
            ..names_and_email()
        },
        None,
    )
    .unwrap();
    let rows = vec![person("A", "B", None); 3];
    assert_eq!(export.write_people(&rows).unwrap(), 2);
    assert!(export.is_full());
    assert_eq!(export.write_people(&rows).unwrap(), 0);
    assert_eq!(export.checkpoint().unwrap().rows, 2);
}

/// 3,000 people exported by keyset batches with a checkpoint after each; the "crash"
/// writes a batch past its last checkpoint, and the resumed export cuts it off. (`make
/// bench` exports a million people.)
async fn thousands_of_rows_in_batches_with_a_resume(db: TestDatabase) {
    const PEOPLE: u64 = 3_000;
    seed_people(
        &db.conn,
        &SeedOptions {
            people: PEOPLE,
            seed: 5,
            coaches: vec![],
        },
    )
    .await
    .unwrap();
    let admin = actor(&db, "admin", Role::Admin).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("everyone.csv");
    let options = ExportOptions {
        columns: vec![
            ExportColumn::Id,
            ExportColumn::SchoolId,
            ExportColumn::LastName,
        ],
        row_cap: 10_000,
    };
    let everyone = PersonFilter::default();

    let mut export = CsvExport::open(&path, options.clone(), None).unwrap();
    let first = people_after(&db.conn, &everyone, &admin, None, 1_200)
        .await
        .unwrap();
    export.write_people(&first.people).unwrap();
    let saved = export.checkpoint().unwrap();
    let resume_after = first.last_visited;
    // Written but never checkpointed: the attempt dies here.
    let lost = people_after(&db.conn, &everyone, &admin, resume_after, 150)
        .await
        .unwrap();
    export.write_people(&lost.people).unwrap();
    export.checkpoint().unwrap();
    drop(export);

    let mut export = CsvExport::open(&path, options, Some(saved)).unwrap();
    let mut after = resume_after;
    loop {
        let batch = people_after(&db.conn, &everyone, &admin, after, 300)
            .await
            .unwrap();
        let Some(last) = batch.last_visited else {
            break;
        };
        after = Some(last);
        export.write_people(&batch.people).unwrap();
        export.checkpoint().unwrap();
    }
    assert_eq!(export.checkpoint().unwrap().rows, PEOPLE);

    let mut reader = csv::Reader::from_path(&path).unwrap();
    assert_eq!(
        reader.headers().unwrap(),
        vec!["id", "school_id", "last_name"]
    );
    let ids: Vec<String> = reader
        .records()
        .map(|record| record.unwrap()[0].to_owned())
        .collect();
    assert_eq!(ids.len() as u64, PEOPLE);
    let distinct: std::collections::HashSet<&String> = ids.iter().collect();
    assert_eq!(distinct.len() as u64, PEOPLE, "no row twice");
}
