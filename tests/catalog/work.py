# ruff: noqa: E501  (one tool a line: a table reads better than wrapped strings)
"""Developer servers: GitHub (modelled on github-mcp-server), Jira (on mcp-atlassian) and
Kubernetes (on mcp-server-kubernetes)."""

GITHUB = """
get_me | r | Get details of the authenticated GitHub user |
search_repositories | r | Search for GitHub repositories by name, topic or owner | query page perPage
get_file_contents | r | Get the contents of a file or directory from a GitHub repository | owner repo path ref
create_or_update_file | w | Create or update a single file in a GitHub repository | owner repo path content message branch sha
push_files | w | Push multiple files to a GitHub repository in a single commit | owner repo branch files message
delete_file | d | Delete a file from a GitHub repository | owner repo path message branch
create_repository | w | Create a new GitHub repository in your account | name description private autoInit
fork_repository | w | Fork a GitHub repository to your account or an organization | owner repo organization
create_branch | w | Create a new branch in a GitHub repository | owner repo branch from_branch
list_branches | r | List branches in a GitHub repository | owner repo page perPage
list_commits | r | Get the list of commits of a branch in a GitHub repository | owner repo sha author page
get_commit | r | Get details for a commit from a GitHub repository | owner repo sha
search_code | r | Search for code across GitHub repositories | query sort order
list_issues | r | List issues in a GitHub repository with filtering options | owner repo state labels since
get_issue | r | Get details of a specific issue in a GitHub repository | owner repo issue_number
create_issue | w | Create a new issue in a GitHub repository | owner repo title body assignees labels
update_issue | w | Update an existing issue in a GitHub repository: title, body, state, labels | owner repo issue_number title body state labels
add_issue_comment | w | Add a comment to a specific issue in a GitHub repository | owner repo issue_number body
get_issue_comments | r | Get comments for a specific issue in a GitHub repository | owner repo issue_number
search_issues | r | Search for issues in GitHub repositories | query sort order
list_pull_requests | r | List pull requests in a GitHub repository | owner repo state head base
get_pull_request | r | Get details of a specific pull request in a GitHub repository | owner repo pullNumber
create_pull_request | w | Create a new pull request in a GitHub repository | owner repo title head base body draft
update_pull_request | w | Update an existing pull request in a GitHub repository | owner repo pullNumber title body state
merge_pull_request | w | Merge a pull request in a GitHub repository | owner repo pullNumber merge_method commit_title
get_pull_request_files | r | Get the files changed in a specific pull request | owner repo pullNumber
get_pull_request_diff | r | Get the diff of a pull request | owner repo pullNumber
get_pull_request_status | r | Get the status of all checks and status checks for a pull request | owner repo pullNumber
get_pull_request_comments | r | Get the review comments on a pull request | owner repo pullNumber
get_pull_request_reviews | r | Get the reviews on a pull request | owner repo pullNumber
create_pull_request_review | w | Create a review on a pull request: approve, request changes or comment | owner repo pullNumber event body
request_copilot_review | w | Request a GitHub Copilot code review for a pull request | owner repo pullNumber
list_tags | r | List git tags in a GitHub repository | owner repo
list_releases | r | List releases in a GitHub repository | owner repo
get_latest_release | r | Get the latest release in a GitHub repository | owner repo
list_notifications | r | List GitHub notifications for the authenticated user | filter since
dismiss_notification | w | Dismiss a notification by marking it read or done | threadID state
list_workflow_runs | r | List GitHub Actions workflow runs for a repository | owner repo workflow_id status branch
run_workflow | w | Run a GitHub Actions workflow by dispatching it | owner repo workflow_id ref inputs
get_job_logs | r | Get the logs of a failed GitHub Actions workflow job | owner repo run_id job_id
list_code_scanning_alerts | r | List code scanning security alerts in a GitHub repository | owner repo state severity
"""

JIRA = """
jira_get_user_profile | r | Retrieve profile information for a specific Jira user | user_identifier
jira_get_issue | r | Get details of a specific Jira issue including its epic links and comments | issue_key fields expand
jira_search | r | Search Jira issues using JQL (Jira Query Language) | jql fields limit
jira_search_fields | r | Search Jira fields by keyword with fuzzy match | keyword limit
jira_get_project_issues | r | Get all issues for a specific Jira project | project_key limit
jira_get_transitions | r | Get available status transitions for a Jira issue | issue_key
jira_get_worklog | r | Get worklog entries (time logged) for a Jira issue | issue_key
jira_download_attachments | r | Download attachments from a Jira issue | issue_key target_dir
jira_get_agile_boards | r | Get Jira agile boards by name, project key, or type | board_name project_key board_type
jira_get_board_issues | r | Get all issues linked to a specific Jira board | board_id jql
jira_get_sprints_from_board | r | Get Jira sprints from a board by state | board_id state
jira_get_sprint_issues | r | Get the Jira issues in a sprint | sprint_id fields
jira_get_issue_link_types | r | Get all available issue link types |
jira_get_all_projects | r | Get all Jira projects accessible to the current user | include_archived
jira_get_project_versions | r | Get all fix versions for a specific Jira project | project_key
jira_create_issue | w | Create a new Jira issue with optional epic link or parent for subtasks | project_key summary issue_type assignee description
jira_batch_create_issues | w | Create multiple Jira issues in a batch | issues validate_only
jira_update_issue | w | Update an existing Jira issue including changing status, adding epic links, updating fields | issue_key fields additional_fields
jira_delete_issue | d | Delete an existing Jira issue | issue_key
jira_add_comment | w | Add a comment to a Jira issue | issue_key comment
jira_add_worklog | w | Add a worklog entry (time spent) to a Jira issue | issue_key time_spent comment started
jira_link_to_epic | w | Link an existing Jira issue to an epic | issue_key epic_key
jira_create_issue_link | w | Create a link between two Jira issues | link_type inward_issue_key outward_issue_key
jira_remove_issue_link | d | Remove a link between two Jira issues | link_id
jira_transition_issue | w | Transition a Jira issue to a new status (move it to done, in progress…) | issue_key transition_id comment
jira_create_sprint | w | Create a Jira sprint for a board | board_id sprint_name start_date end_date goal
jira_update_sprint | w | Update a Jira sprint: name, dates, goal, state | sprint_id sprint_name state goal
"""

KUBERNETES = """
kubectl_get | r | Get or list Kubernetes resources by type, name, and optionally namespace (pods, deployments, services…) | resourceType name namespace output allNamespaces labelSelector
kubectl_describe | r | Describe Kubernetes resources by resource type, name, and optionally namespace | resourceType name namespace
kubectl_apply | w | Apply a Kubernetes YAML manifest from a string or file | manifest filename namespace dryRun
kubectl_delete | d | Delete Kubernetes resources by resource type, name, labels, or from a manifest file | resourceType name namespace labelSelector
kubectl_create | w | Create Kubernetes resources using various methods (from file or using subcommands) | resourceType name namespace manifest
kubectl_logs | r | Get logs from Kubernetes resources like pods, deployments, or jobs | resourceType name namespace container tail since
kubectl_scale | w | Scale a Kubernetes deployment to a number of replicas | name namespace replicas resourceType
kubectl_patch | w | Update field(s) of a resource using strategic merge patch, JSON merge patch, or JSON patch | resourceType name namespace patchData
kubectl_rollout | w | Manage the rollout of a resource (e.g., deployment, daemonset): status, restart, undo, history | subCommand resourceType name namespace
kubectl_context | w | Manage Kubernetes contexts: list contexts, get or set the current context | operation name
kubectl_generic | d | Execute any kubectl command with the provided arguments and flags | command subCommand resourceType name flags args
kubectl_top | r | Show CPU and memory usage of pods or nodes | resourceType namespace name
explain_resource | r | Get documentation for a Kubernetes resource or field | resource apiVersion recursive
list_api_resources | r | List the API resources available in the cluster | apiGroup namespaced
install_helm_chart | w | Install a Helm chart | name chart repo namespace values
upgrade_helm_chart | w | Upgrade a Helm release | name chart repo namespace values
uninstall_helm_chart | d | Uninstall a Helm release | name namespace
port_forward | w | Forward a local port to a port on a Kubernetes resource | resourceType resourceName localPort targetPort namespace
stop_port_forward | w | Stop a port-forward process | id
exec_in_pod | d | Execute a command in a Kubernetes pod or container and return the output | name namespace command container
node_management | d | Manage Kubernetes nodes: cordon, drain, or uncordon a node | operation nodeName force gracePeriod
ping | r | Verify that the counterpart is still responsive and the connection is alive |
cleanup | d | Clean up all managed resources (port forwards, temporary pods) |
"""
