# ruff: noqa: E501  (one task a line: a table reads better than wrapped strings)
"""Tasks as a person would ask them, each with the tool it needs and, for a model that was not
offered that tool, what it would search for with `palui__find_tools` (a plain-English gist)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Task:
    text: str
    tool: str  # the full name of the tool the task needs
    search: str  # what a model would ask find_tools for


_TABLE = """
github__get_issue | show my github issue 12 in palui/palui | get a github issue
github__list_pull_requests | which PRs are open on the palui repo? | list pull requests
github__create_issue | open an issue on github: the login page crashes on Safari | create a github issue
github__add_issue_comment | reply on issue 40 that the fix is in the next release | comment on an issue
github__merge_pull_request | merge pull request 7, the checks passed | merge a pull request
github__get_pull_request_diff | what did PR 31 change exactly? show me the diff | pull request diff
github__list_commits | what were the last commits on main? | list commits
github__search_code | where in our repos do we call parse_schedule? | search code
github__get_file_contents | show me the README of palui/palui | read a file from a repository
github__create_branch | make a branch called fix-login from main | create a branch
github__get_job_logs | why did the CI build fail on my last push? show the logs | workflow job logs
github__list_notifications | anything new in my github notifications? | github notifications
github__get_latest_release | what's the latest release of palui? | latest release
github__create_pull_request_review | approve PR 12 with a short note | review a pull request
word__get_document_text | what does report.docx say? read it to me | read the text of a word document
word__create_document | start a new Word document called minutes.docx | create a word document
word__add_paragraph | add a paragraph to minutes.docx saying the meeting ended at 5 | add a paragraph to a document
word__add_heading | put a heading "Budget" in minutes.docx | add a heading
word__add_table | add a 3 by 4 table to the report document | add a table to a document
word__search_and_replace | in contract.docx replace every "ACME" with "Acme Ltd" | replace text in a document
word__convert_to_pdf | turn my cover letter docx into a pdf | convert a document to pdf
word__get_all_comments | list the review comments in thesis.docx | comments in a document
word__add_footnote_to_document | add a footnote to paragraph 3 of the essay citing Smith 2020 | add a footnote
word__protect_document | password protect salaries.docx | protect a document with a password
word__merge_table_cells | merge the first row of the table in the word file | merge table cells
word__add_page_break | insert a page break in my word doc | page break
word__format_text | make the first sentence of paragraph 2 bold in the report | format text bold
excel__read_data_from_excel | what's in my excel sheet budget.xlsx, tab 2025? | read data from an excel sheet
excel__write_data_to_excel | put these numbers into sales.xlsx starting at A2 | write data to a worksheet
excel__create_chart | make a bar chart of monthly sales in the spreadsheet | create a chart
excel__create_pivot_table | summarise the expenses sheet by category with a pivot table | pivot table
excel__apply_formula | add a total at the bottom of column C in budget.xlsx | apply a formula to a cell
excel__create_worksheet | add a new tab called Q3 to the workbook | create a worksheet
excel__sort_range | sort the customer list by last name in clients.xlsx | sort rows
excel__freeze_panes | freeze the header row of my spreadsheet | freeze panes
excel__add_conditional_formatting | highlight in red every overdue invoice in the excel file | conditional formatting
excel__insert_rows | insert two empty rows above row 10 in the sheet | insert rows
excel__append_rows | append today's expenses to my expenses workbook | append rows to a sheet
kubernetes__kubectl_get | list the pods in the staging namespace | list kubernetes pods
kubernetes__kubectl_logs | show me the logs of the api pod in production | pod logs
kubernetes__kubectl_scale | scale the web deployment to 5 replicas | scale a deployment
kubernetes__kubectl_rollout | restart the checkout deployment on k8s | restart a deployment rollout
kubernetes__install_helm_chart | install the redis helm chart in the cache namespace | install a helm chart
kubernetes__kubectl_describe | why is the worker pod pending? describe it | describe a kubernetes resource
slack__slack_post_message | post in #general on slack that the deploy is done | post a slack message
slack__slack_get_channel_history | what did people say in #random today? | read a slack channel
slack__slack_search_messages | find the slack message where Ana shared the vpn link | search slack messages
slack__slack_set_status | set my slack status to "on holiday" | set slack status
calendar__list_events | what's on my calendar tomorrow? | list calendar events
calendar__create_event | book lunch with Ana on Friday at 1pm | create a calendar event
calendar__get_freebusy | when am I free next Tuesday afternoon? | find free time
calendar__delete_event | cancel my dentist appointment next week | delete a calendar event
calendar__respond_to_event | accept the invitation to the team offsite | accept an invitation
gmail__search_emails | did I get an email from the bank this week? | search emails
gmail__send_email | email Pedro that I'll be late to the meeting | send an email
gmail__draft_email | draft a reply to the landlord about the leak, don't send it | draft an email
gmail__create_filter | make a gmail filter that archives newsletters | create a mail filter
gmail__download_attachment | save the pdf attachment from the last invoice email | download an email attachment
notion__notion-search | find my notion page about the trip to Lisbon | search notion
notion__notion-create-pages | create a notion page with today's meeting notes | create a notion page
notion__notion-query-database | in notion, which tasks in my Projects database are due this week? | query a notion database
notion__notion-append-blocks | add a to-do "call the bank" to my notion todo page | append a to-do to a page
jira__jira_create_issue | file a jira ticket in project WEB: checkout button misaligned | create a jira issue
jira__jira_transition_issue | move WEB-142 to done | transition a jira issue status
jira__jira_search | which jira tickets are assigned to me and still open? | search jira issues
jira__jira_add_worklog | log 2 hours on WEB-99 for today | log work time on a jira issue
jira__jira_get_sprint_issues | what's in the current sprint? | issues in a sprint
files__read_file | read ~/notes/todo.txt | read a file
files__list_directory | what files are in my Downloads folder? | list a directory
files__search_files | find every pdf under ~/Documents | search for files
files__move_file | rename draft.txt to final.txt | move or rename a file
postgres__query | how many users signed up yesterday? check the database | run a sql query
postgres__get_object_details | what columns does the orders table have? | describe a table
postgres__get_top_queries | which queries are slowest on the db? | slow queries
postgres__analyze_db_health | is the postgres database healthy? | database health
browser__browser_navigate | open example.com in the browser | open a web page
browser__browser_take_screenshot | take a screenshot of the page you have open | screenshot of the page
browser__browser_fill_form | fill in the contact form on that page with my name and email | fill a web form
"""

TASKS: tuple[Task, ...] = tuple(
    Task(text.strip(), tool.strip(), search.strip())
    for tool, text, search in (line.split(" | ") for line in _TABLE.strip().splitlines())
)
