//! Staff accounts and personal API tokens as the dashboard shows them, on both sides.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// What a staff user may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Searches the caseload and submits bulk actions; sees only their own tasks.
    Staff,
    /// Everything staff can do, plus queue health, repair of anyone's tasks and accounts.
    Admin,
}

impl Role {
    /// Every role, in the order forms offer them.
    pub const ALL: [Role; 2] = [Role::Staff, Role::Admin];

    /// The value stored in `staff_user.role` and sent by forms.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Staff => "staff",
            Role::Admin => "admin",
        }
    }
}

/// A role name that is neither `staff` nor `admin`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownRole(pub String);

impl std::fmt::Display for UnknownRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown role {:?} (expected staff or admin)", self.0)
    }
}

impl std::error::Error for UnknownRole {}

impl std::str::FromStr for Role {
    type Err = UnknownRole;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        Role::ALL
            .into_iter()
            .find(|role| role.as_str() == value)
            .ok_or_else(|| UnknownRole(value.to_owned()))
    }
}

/// A staff account as an admin sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Account {
    pub id: Uuid,
    pub username: String,
    pub display_name: String,
    pub role: Role,
    pub created_at: DateTime<Utc>,
    /// When an admin disabled it; a disabled user cannot sign in, and their tasks stop.
    pub disabled_at: Option<DateTime<Utc>>,
    /// A reset or a new account: the next sign-in must choose a password first.
    pub must_change_password: bool,
    /// Where the user is told of their people's news (early alerts, new people to coach)
    /// and of their own tasks' ends.
    #[serde(default)]
    pub email: Option<String>,
    /// Which of their tasks' ends they are emailed about.
    #[serde(default)]
    pub task_emails: TaskEmails,
    /// An admin emailed of every task that fails, whoever owns it.
    #[serde(default)]
    pub failure_alerts: bool,
}

/// Which of their own tasks' ends a user is emailed about (at [`Account::email`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskEmails {
    /// Every end: completed, failed, abandoned.
    All,
    /// Only a task that failed (FAILURE or ERROR): the end someone must act on.
    #[default]
    Failures,
    None,
}

impl TaskEmails {
    /// Every choice, in the order the Account page offers them.
    pub const ALL: [TaskEmails; 3] = [TaskEmails::All, TaskEmails::Failures, TaskEmails::None];

    /// As stored (`staff_user.task_emails`) and sent by forms.
    pub const fn as_str(self) -> &'static str {
        match self {
            TaskEmails::All => "all",
            TaskEmails::Failures => "failures",
            TaskEmails::None => "none",
        }
    }

    /// As the Account page offers it.
    pub const fn label(self) -> &'static str {
        match self {
            TaskEmails::All => "whenever one ends",
            TaskEmails::Failures => "only when one fails",
            TaskEmails::None => "never",
        }
    }

    /// The choice stored as `text`; the default for anything else.
    pub fn parse(text: &str) -> Self {
        Self::ALL
            .into_iter()
            .find(|choice| choice.as_str() == text)
            .unwrap_or_default()
    }
}

/// A personal API token as its owner sees it: never the secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenInfo {
    pub id: Uuid,
    pub name: String,
    /// Read-and-act; otherwise read-only.
    pub can_act: bool,
    pub created_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    pub last_used_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
    /// Whether it worked when it was read (neither revoked nor expired).
    pub live: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_read_back_as_written() {
        for role in Role::ALL {
            assert_eq!(role.as_str().parse::<Role>(), Ok(role));
        }
        assert_eq!(
            "root".parse::<Role>().unwrap_err().to_string(),
            "unknown role \"root\" (expected staff or admin)"
        );
    }
}
