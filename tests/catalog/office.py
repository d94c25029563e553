# ruff: noqa: E501  (one tool a line: a table reads better than wrapped strings)
"""Office servers: Word (54 tools, modelled on Office-Word-MCP-Server) and Excel (48, on
excel-mcp-server)."""

WORD = """
create_document | w | Create a new Word document with optional metadata | filename title author
copy_document | w | Create a copy of a Word document | source_filename destination_filename
get_document_info | r | Get information about a Word document: author, dates, page and word counts | filename
get_document_text | r | Extract all text from a Word document | filename
get_document_outline | r | Get the structure of a Word document: headings, paragraphs and tables | filename
list_available_documents | r | List all .docx files in the specified directory | directory
get_document_xml | r | Get the raw XML structure of a Word document | filename
get_paragraph_text_from_document | r | Get text from a specific paragraph in a Word document | filename paragraph_index
find_text_in_document | r | Find occurrences of specific text in a Word document | filename text_to_find match_case whole_word
add_paragraph | w | Add a paragraph to a Word document | filename text style
add_heading | w | Add a heading to a Word document | filename text level
add_picture | w | Add an image to a Word document | filename image_path width
add_table | w | Add a table to a Word document | filename rows cols data
add_page_break | w | Add a page break to the document | filename
delete_paragraph | d | Delete a paragraph from a document | filename paragraph_index
search_and_replace | w | Search for text and replace all occurrences in a Word document | filename find_text replace_text
insert_header_near_text | w | Insert a header before or after the first paragraph that contains the target text | filename target_text header_title position header_style
insert_line_or_paragraph_near_text | w | Insert a new line or paragraph before or after the paragraph with the target text | filename target_text line_text position
insert_numbered_list_near_text | w | Insert a bulleted or numbered list near the paragraph with the target text | filename target_text list_items position bullet_type
replace_paragraph_block_below_header | w | Replace the paragraphs below a heading, keeping the heading | filename header_text new_paragraphs
replace_block_between_manual_anchors | w | Replace the content between two anchor texts | filename start_anchor_text new_paragraphs end_anchor_text
create_custom_style | w | Create a custom paragraph or character style in the document | filename style_name bold italic font_size font_name color base_style
format_text | w | Format a range of text within a paragraph: bold, italic, underline, color, font | filename paragraph_index start_pos end_pos bold italic underline color font_size
format_table | w | Format a table with borders, shading and structure | filename table_index has_header_row border_style shading
set_table_cell_shading | w | Apply shading or fill color to a specific table cell | filename table_index row_index col_index fill_color
apply_table_alternating_rows | w | Apply alternating row colors to a table for readability | filename table_index color1 color2
highlight_table_header | w | Apply special highlighting to a table's header row | filename table_index header_color text_color
merge_table_cells | w | Merge cells in a rectangular area of a table | filename table_index start_row start_col end_row end_col
merge_table_cells_horizontal | w | Merge cells horizontally in a single table row | filename table_index row_index start_col end_col
merge_table_cells_vertical | w | Merge cells vertically in a single table column | filename table_index col_index start_row end_row
set_table_cell_alignment | w | Set the text alignment of a specific table cell | filename table_index row_index col_index horizontal vertical
set_table_alignment_all | w | Set the text alignment of all cells in a table | filename table_index horizontal vertical
set_table_column_width | w | Set the width of a specific table column | filename table_index col_index width width_type
set_table_column_widths | w | Set the widths of several table columns | filename table_index widths width_type
set_table_width | w | Set the overall width of a table | filename table_index width width_type
auto_fit_table_columns | w | Auto-fit table columns to their content | filename table_index
format_table_cell_text | w | Format the text in a table cell: bold, italic, color, font | filename table_index row_index col_index text_content bold italic font_size
set_table_cell_padding | w | Set the padding (margins) of a table cell | filename table_index row_index col_index top bottom left right
protect_document | w | Add password protection to a Word document | filename password
unprotect_document | w | Remove password protection from a Word document | filename password
add_digital_signature | w | Add a digital signature to a Word document | filename signer_name reason
verify_document | r | Verify a document's protection and digital signature | filename password
add_footnote_to_document | w | Add a footnote to a specific paragraph in a Word document | filename paragraph_index footnote_text
add_footnote_after_text | w | Add a footnote after the given text in a document | filename search_text footnote_text
add_footnote_before_text | w | Add a footnote before the given text in a document | filename search_text footnote_text
add_footnote_enhanced | w | Add a footnote with proper numbering and formatting | filename paragraph_index footnote_text
add_endnote_to_document | w | Add an endnote to a specific paragraph in a Word document | filename paragraph_index endnote_text
customize_footnote_style | w | Customize the numbering and formatting of footnotes | filename numbering_format start_number font_size
delete_footnote_from_document | d | Delete a footnote from a Word document | filename footnote_id search_text
validate_document_footnotes | r | Check all footnotes of a document for problems | filename
convert_to_pdf | w | Convert a Word document to PDF format | filename output_filename
get_all_comments | r | Extract all comments from a Word document | filename
get_comments_by_author | r | Extract the comments of a specific author from a Word document | filename author
get_comments_for_paragraph | r | Extract the comments on a specific paragraph of a Word document | filename paragraph_index
"""

EXCEL = """
create_workbook | w | Create a new Excel workbook | filepath
create_worksheet | w | Create a new worksheet in an Excel workbook | filepath sheet_name
copy_worksheet | w | Copy a worksheet within a workbook | filepath source_sheet target_sheet
delete_worksheet | d | Delete a worksheet from a workbook | filepath sheet_name
rename_worksheet | w | Rename a worksheet in a workbook | filepath old_name new_name
list_worksheets | r | List the worksheets (tabs) of an Excel workbook | filepath
get_workbook_metadata | r | Get metadata about a workbook including sheets and used ranges | filepath include_ranges
read_data_from_excel | r | Read data from an Excel worksheet, cell values with their addresses | filepath sheet_name start_cell end_cell
write_data_to_excel | w | Write data rows to an Excel worksheet starting at a cell | filepath sheet_name data start_cell
append_rows | w | Append rows of values at the end of the data in a worksheet | filepath sheet_name rows
get_cell_value | r | Get the value of one cell of a worksheet | filepath sheet_name cell
set_cell_value | w | Set the value of one cell of a worksheet | filepath sheet_name cell value
clear_range | d | Clear the values and formatting of a range of cells | filepath sheet_name start_cell end_cell
apply_formula | w | Apply an Excel formula to a cell, e.g. a sum or an average | filepath sheet_name cell formula
validate_formula_syntax | r | Validate an Excel formula's syntax without applying it | filepath sheet_name cell formula
format_range | w | Apply formatting to a range of cells: bold, colors, number format, borders | filepath sheet_name start_cell end_cell bold italic font_color bg_color number_format
merge_cells | w | Merge a range of cells | filepath sheet_name start_cell end_cell
unmerge_cells | w | Unmerge a previously merged range of cells | filepath sheet_name start_cell end_cell
get_merged_cells | r | Get the merged cell ranges of a worksheet | filepath sheet_name
copy_range | w | Copy a range of cells to another location | filepath sheet_name source_start source_end target_start target_sheet
delete_range | d | Delete a range of cells and shift the remaining cells | filepath sheet_name start_cell end_cell shift_direction
validate_excel_range | r | Check that a range exists and is properly formatted | filepath sheet_name start_cell end_cell
get_data_validation_info | r | Get the data validation rules (drop-down lists) of a worksheet | filepath sheet_name
add_data_validation | w | Add a data validation rule or drop-down list to a range | filepath sheet_name range validation_type values
insert_rows | w | Insert one or more rows starting at a row | filepath sheet_name start_row count
insert_columns | w | Insert one or more columns starting at a column | filepath sheet_name start_col count
delete_sheet_rows | d | Delete one or more rows starting at a row | filepath sheet_name start_row count
delete_sheet_columns | d | Delete one or more columns starting at a column | filepath sheet_name start_col count
sort_range | w | Sort the rows of a range by one or more columns | filepath sheet_name range sort_by ascending
filter_range | w | Apply an auto filter to a range of a worksheet | filepath sheet_name range column criteria
find_and_replace | w | Find and replace values across a worksheet | filepath sheet_name find replace match_case
freeze_panes | w | Freeze rows and columns so they stay visible when scrolling | filepath sheet_name cell
set_column_width | w | Set the width of one or more worksheet columns | filepath sheet_name columns width
set_row_height | w | Set the height of one or more worksheet rows | filepath sheet_name rows height
autofit_columns | w | Auto-fit the widths of columns to their content | filepath sheet_name columns
add_conditional_formatting | w | Highlight cells with conditional formatting rules, color scales or data bars | filepath sheet_name range rule_type formula color
remove_conditional_formatting | w | Remove the conditional formatting rules of a range | filepath sheet_name range
create_chart | w | Create a chart (line, bar, pie, scatter) from worksheet data | filepath sheet_name data_range chart_type target_cell title x_axis y_axis
create_pivot_table | w | Create a pivot table summarising worksheet data | filepath sheet_name data_range rows values columns agg_func
create_table | w | Turn a range into a native Excel table with headers and style | filepath sheet_name data_range table_name table_style
add_comment | w | Add a comment (note) to a cell | filepath sheet_name cell text author
get_comments | r | Get the comments (notes) of a worksheet's cells | filepath sheet_name
protect_sheet | w | Protect a worksheet with a password against edits | filepath sheet_name password
unprotect_sheet | w | Remove the protection of a worksheet | filepath sheet_name password
hide_sheet | w | Hide a worksheet from view | filepath sheet_name
add_hyperlink | w | Add a hyperlink to a cell | filepath sheet_name cell url text
insert_image | w | Insert an image into a worksheet at a cell | filepath sheet_name image_path cell
export_sheet_to_csv | r | Export a worksheet to a CSV file | filepath sheet_name csv_path
"""
