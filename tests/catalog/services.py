# ruff: noqa: E501  (one tool a line: a table reads better than wrapped strings)
"""Everyday servers: Slack, Google Calendar, Gmail, Notion, the filesystem server, Postgres and
Playwright's browser (names and descriptions modelled on their public MCP servers)."""

SLACK = """
slack_list_channels | r | List public channels in the Slack workspace with pagination | limit cursor
slack_post_message | w | Post a new message to a Slack channel | channel_id text
slack_reply_to_thread | w | Reply to a specific message thread in Slack | channel_id thread_ts text
slack_add_reaction | w | Add a reaction emoji to a Slack message | channel_id timestamp reaction
slack_get_channel_history | r | Get recent messages from a Slack channel | channel_id limit
slack_get_thread_replies | r | Get all replies in a Slack message thread | channel_id thread_ts
slack_get_users | r | Get a list of all users in the Slack workspace with their basic profile | limit cursor
slack_get_user_profile | r | Get detailed profile information for a specific Slack user | user_id
slack_search_messages | r | Search Slack messages across channels | query count sort
slack_list_dms | r | List your direct message conversations in Slack | limit
slack_send_dm | w | Send a direct message to a Slack user | user_id text
slack_set_status | w | Set your Slack status text and emoji | status_text status_emoji expiration
slack_create_channel | w | Create a new Slack channel | name is_private
slack_invite_to_channel | w | Invite users to a Slack channel | channel_id users
slack_upload_file | w | Upload a file to a Slack channel | channel_id filename content title
slack_schedule_message | w | Schedule a Slack message to be posted later | channel_id text post_at
"""

CALENDAR = """
list_calendars | r | List all Google calendars available to the user |
list_events | r | List upcoming events from one or more Google calendars within a time range | calendarId timeMin timeMax
search_events | r | Search calendar events by text in their title, description or location | calendarId query timeMin timeMax
get_event | r | Get the details of a calendar event | calendarId eventId
create_event | w | Create a new calendar event with attendees, location and reminders | calendarId summary start end attendees location description
update_event | w | Update an existing calendar event: time, title, attendees | calendarId eventId summary start end attendees
delete_event | d | Delete a calendar event | calendarId eventId
respond_to_event | w | Accept, decline or tentatively accept an event invitation | calendarId eventId response
get_freebusy | r | Query free/busy availability across calendars to find a free slot | calendars timeMin timeMax
quick_add_event | w | Create an event from a plain-language text like "Lunch with Ana tomorrow at 1pm" | calendarId text
list_colors | r | List the colors available for calendars and events |
get_current_time | r | Get the current date and time in the calendar's time zone | timeZone
"""

GMAIL = """
send_email | w | Send a new email | to subject body cc bcc attachments
draft_email | w | Draft a new email without sending it | to subject body cc bcc
read_email | r | Retrieve the content of a specific email | messageId
search_emails | r | Search for emails using Gmail search syntax (from:, subject:, after:) | query maxResults
modify_email | w | Modify email labels (move to different folders, mark read or unread) | messageId addLabelIds removeLabelIds
delete_email | d | Permanently delete an email | messageId
list_email_labels | r | Retrieve all available Gmail labels |
create_label | w | Create a new Gmail label | name messageListVisibility
update_label | w | Update an existing Gmail label | id name
delete_label | d | Delete a Gmail label | id
get_or_create_label | w | Get an existing label by name or create it if it doesn't exist | name
batch_modify_emails | w | Modify labels for multiple emails in batches | messageIds addLabelIds removeLabelIds
batch_delete_emails | d | Permanently delete multiple emails in batches | messageIds
create_filter | w | Create a new Gmail filter that labels, archives or forwards matching mail | criteria action
list_filters | r | Retrieve all Gmail filters |
get_filter | r | Get the details of a Gmail filter | filterId
delete_filter | d | Delete a Gmail filter | filterId
download_attachment | r | Download an email attachment to a file | messageId attachmentId savePath
reply_email | w | Reply to an email in its thread | messageId body replyAll
"""

NOTION = """
notion-search | r | Search the Notion workspace and connected sources for pages and databases | query query_type
notion-fetch | r | Retrieve the content of a Notion page or database by URL or id | id
notion-create-pages | w | Create one or more Notion pages with properties and content | parent pages
notion-update-page | w | Update a Notion page's properties or content | page_id command properties new_str
notion-move-pages | w | Move one or more Notion pages or databases to a new parent | page_or_database_ids new_parent
notion-duplicate-page | w | Duplicate a Notion page | page_id
notion-create-database | w | Create a new Notion database with a schema of properties | parent title properties
notion-update-database | w | Update a Notion database's title, description or properties | database_id title properties
notion-query-database | r | Query a Notion database with filters and sorts | database_id filter sorts
notion-create-comment | w | Add a comment to a Notion page | parent rich_text
notion-get-comments | r | Get the comments of a Notion page | page_id
notion-get-users | r | List the users of the Notion workspace | query
notion-get-self | r | Get information about your own Notion bot user and workspace |
notion-append-blocks | w | Append content blocks (paragraphs, to-dos, lists) to a Notion page | block_id children
notion-get-block-children | r | Get the content blocks of a Notion page or block | block_id
notion-delete-block | d | Delete (archive) a Notion block or page | block_id
notion-get-teams | r | List the teamspaces of the Notion workspace | query
"""

FILES = """
read_file | r | Read the complete contents of a file from the file system | path head tail
read_multiple_files | r | Read the contents of multiple files simultaneously | paths
write_file | w | Create a new file or completely overwrite an existing file with new content | path content
edit_file | w | Make line-based edits to a text file, replacing exact text | path edits dryRun
create_directory | w | Create a new directory or ensure a directory exists | path
list_directory | r | Get a detailed listing of all files and directories in a specified path | path
list_directory_with_sizes | r | List files and directories in a path with their sizes | path sortBy
directory_tree | r | Get a recursive tree view of files and directories | path
move_file | w | Move or rename files and directories | source destination
search_files | r | Recursively search for files and directories matching a pattern | path pattern excludePatterns
get_file_info | r | Get metadata about a file or directory: size, creation time, modified time, permissions | path
list_allowed_directories | r | List the directories this server is allowed to access |
read_media_file | r | Read an image or audio file and return its base64 data | path
"""

POSTGRES = """
list_schemas | r | List all schemas in the PostgreSQL database |
list_objects | r | List tables, views, sequences or extensions in a database schema | schema_name object_type
get_object_details | r | Show the columns, constraints and indexes of a database table or view | schema_name object_name object_type
execute_sql | d | Execute any SQL statement against the PostgreSQL database | sql
query | r | Run a read-only SQL query against the PostgreSQL database | sql
explain_query | r | Explain the execution plan of a SQL query, with its costs | sql analyze hypothetical_indexes
get_top_queries | r | Report the slowest or most resource-intensive queries (pg_stat_statements) | sort_by limit
analyze_workload_indexes | r | Analyze the database workload and recommend indexes | max_index_size_mb method
analyze_query_indexes | r | Recommend indexes for a list of SQL queries | queries max_index_size_mb
analyze_db_health | r | Check database health: buffer cache, connections, vacuum, replication, sequences | health_type
"""

BROWSER = """
browser_navigate | w | Navigate the browser to a URL | url
browser_navigate_back | w | Go back to the previous page |
browser_snapshot | r | Capture an accessibility snapshot of the current page, better than a screenshot |
browser_click | w | Perform a click on an element of the web page | element ref doubleClick button
browser_type | w | Type text into an editable element of the page | element ref text submit slowly
browser_hover | w | Hover over an element on the page | element ref
browser_drag | w | Perform drag and drop between two elements | startElement startRef endElement endRef
browser_select_option | w | Select an option in a dropdown | element ref values
browser_press_key | w | Press a key on the keyboard | key
browser_take_screenshot | r | Take a screenshot of the current page or an element | filename element ref fullPage
browser_pdf_save | r | Save the current page as a PDF | filename
browser_file_upload | w | Upload one or multiple files to a page | paths
browser_handle_dialog | w | Accept or dismiss a browser dialog | accept promptText
browser_tabs | w | List, create, close, or select a browser tab | action index
browser_close | w | Close the browser page |
browser_resize | w | Resize the browser window | width height
browser_console_messages | r | Return all console messages of the page |
browser_network_requests | r | Return all network requests since loading the page |
browser_evaluate | d | Evaluate a JavaScript expression on the page or an element | function element ref
browser_wait_for | r | Wait for text to appear or disappear or a specified time to pass | time text textGone
browser_fill_form | w | Fill multiple form fields of a web page | fields
browser_install | w | Install the browser specified in the config |
"""
