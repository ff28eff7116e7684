<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="en_US">
<context>
    <name>Banner</name>
    <message>
        <location filename="../widgets.py" line="33"/>
        <source>Dismiss</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../widgets.py" line="52"/>
        <source>Open the log file</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>Chat</name>
    <message>
        <location filename="../chat.py" line="55"/>
        <source>page {n}</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>ChatView</name>
    <message>
        <location filename="../chat.py" line="393"/>
        <source>Ask about your documents…  (Enter sends, Shift+Enter: new line)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../chat.py" line="396"/>
        <location filename="../chat.py" line="465"/>
        <source>Send</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../chat.py" line="421"/>
        <source>Answers come only from the documents in this workspace, with their sources. Drop files or folders anywhere on the window to add them.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../chat.py" line="430"/>
        <source>Ask anything about the {n} documents in “{ws}”</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../chat.py" line="433"/>
        <source>“{ws}” has no documents yet</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../chat.py" line="465"/>
        <source>Stop</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../chat.py" line="466"/>
        <source>Stop the answer (Esc)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../chat.py" line="466"/>
        <source>Send (Enter)</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>HardwarePanel</name>
    <message>
        <location filename="../hardware_panel.py" line="50"/>
        <source>Looking at this machine…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="75"/>
        <source>No GPU found: the models run on the CPU.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="86"/>
        <source>Hardware</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="89"/>
        <source>updated {time}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="92"/>
        <source>Refresh</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="102"/>
        <source>integrated GPU</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="102"/>
        <source>discrete GPU</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="104"/>
        <location filename="../hardware_panel.py" line="143"/>
        <source>driver {name}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="104"/>
        <location filename="../hardware_panel.py" line="143"/>
        <source>none</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="106"/>
        <source>ROCm: yes</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="106"/>
        <source>ROCm: no</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="112"/>
        <source>VRAM</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="112"/>
        <source>GTT</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="120"/>
        <source>Models are loaded into this memory</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="142"/>
        <source>NPU</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="152"/>
        <source>CPU</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="153"/>
        <source>{cores} cores, {threads} threads</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="162"/>
        <location filename="../hardware_panel.py" line="185"/>
        <source>RAM</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="175"/>
        <source>Memory plan</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="176"/>
        <source>No chat model chosen yet.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="178"/>
        <source>Memory plan: {model}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="179"/>
        <source>{ctx} tokens of context</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="182"/>
        <source>GPU</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="190"/>
        <source>weights</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="190"/>
        <source>KV cache</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="190"/>
        <source>compute</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="191"/>
        <source>embedder</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="198"/>
        <source>Layers on the GPU: {planned} of {total} planned</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="200"/>
        <source>{n} in use</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="201"/>
        <source>model not loaded yet</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="204"/>
        <source>Fits in memory</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="204"/>
        <source>Does not fit in memory</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="225"/>
        <source>{need} of {free} free</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="232"/>
        <source>Runtimes</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="238"/>
        <location filename="../hardware_panel.py" line="246"/>
        <source>not installed</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="240"/>
        <source>CPU only</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="249"/>
        <source>no working provider</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="270"/>
        <source>Checks</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>LibraryPanel</name>
    <message>
        <location filename="../library.py" line="59"/>
        <source>Add files…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="60"/>
        <source>Add documents to this workspace (Ctrl+O)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="63"/>
        <source>Add folder…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="69"/>
        <source>More actions for the selected documents</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="87"/>
        <source>Cancel</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="88"/>
        <source>Stop indexing; the documents done so far are kept</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="99"/>
        <source>Document</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="99"/>
        <source>Status</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="99"/>
        <source>Passages</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="121"/>
        <source>Watched folders</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="123"/>
        <source>Watch a folder…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="124"/>
        <source>Keep a folder in sync: new, changed and deleted files are picked up by themselves</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="140"/>
        <source>None: documents are indexed when you add them.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="143"/>
        <source>Drop files or folders anywhere on the window to add them; drop a .gguf file to add a chat model.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="150"/>
        <source>Open</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="152"/>
        <source>Re-index</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="154"/>
        <source>Remove from the library</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="165"/>
        <source>starting…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="192"/>
        <source>Open folder</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="193"/>
        <source>Stop watching</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="203"/>
        <source>queued</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="203"/>
        <source>reading…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="203"/>
        <source>embedding…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="204"/>
        <source>done</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="204"/>
        <source>failed</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="204"/>
        <source>not indexed (stopped)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="205"/>
        <source>interrupted, will be redone</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="245"/>
        <source>Looking for documents…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="282"/>
        <source>Indexing stopped.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="283"/>
        <source>The documents indexed so far are kept; add the rest again to go on.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="287"/>
        <source>{n} of the documents could not be read.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="288"/>
        <source>Each one&apos;s reason is in its row (hover for the full text).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="295"/>
        <source>{done} of {total} files · {chunks} passages</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="302"/>
        <source>{rate:.0f} passages/s · about {eta} left</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="324"/>
        <source>{n} pages</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="339"/>
        <source>No documents yet.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="341"/>
        <source>{n} documents · {chunks} passages</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../library.py" line="343"/>
        <source>{n} failed</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>MainWindow</name>
    <message>
        <location filename="../main_window.py" line="78"/>
        <location filename="../main_window.py" line="200"/>
        <source>Library</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="79"/>
        <location filename="../main_window.py" line="201"/>
        <source>Hardware</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="168"/>
        <source>Model: {name}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="169"/>
        <source>Loading {name}…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="170"/>
        <source>Model: {name} · ready</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="171"/>
        <source>Model: {name} · failed to load</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="180"/>
        <source>&amp;File</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="181"/>
        <source>Add files…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="182"/>
        <source>Add folder…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="183"/>
        <source>Watch a folder…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="185"/>
        <source>New workspace…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="187"/>
        <source>Settings…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="189"/>
        <source>Quit</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="190"/>
        <source>&amp;Chat</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="191"/>
        <source>New chat</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="192"/>
        <source>Stop</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="194"/>
        <source>Export chat…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="196"/>
        <source>&amp;View</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="197"/>
        <source>Side panel</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="202"/>
        <source>&amp;Help</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="203"/>
        <source>Open log file</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="204"/>
        <source>Open data folder</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="206"/>
        <location filename="../main_window.py" line="807"/>
        <source>About Hearth</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="252"/>
        <source>New workspace</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="252"/>
        <source>Name:</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="269"/>
        <source>Rename workspace</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="269"/>
        <source>Name shown:</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="285"/>
        <source>Delete workspace</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="286"/>
        <source>Delete “{ws}”? Its documents leave the index (the files themselves stay where they are) and its chats are deleted.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="313"/>
        <source>{ws} — Hearth</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="332"/>
        <source>Add documents</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="338"/>
        <source>Add a folder</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="382"/>
        <source>Indexed {n} documents ({chunks} passages) in {s:.1f} s; {u} unchanged, {f} failed.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="397"/>
        <source>Stopping after the current document…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="402"/>
        <source>Watch a folder</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="436"/>
        <source>stopped: {reason}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="446"/>
        <source>syncing… {done} of {total}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="450"/>
        <source>in sync · {time}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="452"/>
        <source>{n} failed</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="462"/>
        <source>Remove documents</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="463"/>
        <source>Remove {names} from the library? The files themselves are not deleted.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="476"/>
        <source>Adding the model {name}…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="479"/>
        <source>Adding the model {name}… {pct:.0f}%</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="483"/>
        <source>{name} is now in the model library.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="484"/>
        <source>Choose it as the chat model in Settings (Ctrl+,).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="531"/>
        <source>Export chat</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="532"/>
        <source>Markdown (*.md)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="537"/>
        <source>Saved {path}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="559"/>
        <source>Waiting for the model to load…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="606"/>
        <source>Stopped.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="661"/>
        <source>{name} is no longer at {folder}.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="662"/>
        <source>Re-index it from its new place, or remove it.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="780"/>
        <source>API: {url}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="781"/>
        <source> (key required)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="784"/>
        <source>Your administrator requires a key for the local API, also on this computer.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="785"/>
        <source>Your key, shown only this once (apps send it as &apos;Authorization: Bearer KEY&apos;): {key}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../main_window.py" line="808"/>
        <source>&lt;b&gt;Hearth&lt;/b&gt;&lt;br&gt;Private, offline answers from your own documents.&lt;br&gt;Nothing leaves this computer.</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>PdfViewer</name>
    <message>
        <location filename="../pdf_viewer.py" line="49"/>
        <source>Page</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../pdf_viewer.py" line="59"/>
        <source>Zoom out</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../pdf_viewer.py" line="59"/>
        <source>Zoom in</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../pdf_viewer.py" line="65"/>
        <source>Fit width</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../pdf_viewer.py" line="84"/>
        <source>{name} — Hearth</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../pdf_viewer.py" line="86"/>
        <source>of {n}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../pdf_viewer.py" line="121"/>
        <source>Passage highlighted</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>QuoteRow</name>
    <message>
        <location filename="../chat.py" line="164"/>
        <source>Open {file} at this quote</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>SettingsDialog</name>
    <message>
        <location filename="../settings_dialog.py" line="40"/>
        <source>Settings</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="50"/>
        <source>Loading the model library…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="52"/>
        <source>Chat model</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="56"/>
        <location filename="../settings_dialog.py" line="59"/>
        <source>{n} tokens</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="63"/>
        <source>Context size</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="68"/>
        <source>Automatic</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="69"/>
        <source>Manual:</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="85"/>
        <source>GPU layers</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="86"/>
        <location filename="../settings_dialog.py" line="191"/>
        <source>Working out the memory plan…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="92"/>
        <source>The built-in embedding model; others can be added in a later version.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="93"/>
        <source>Embedding model</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="98"/>
        <source> tokens</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="100"/>
        <source>Passage size for documents indexed from now on; re-index to apply it to documents already indexed.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="102"/>
        <source>Passage size</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="109"/>
        <source>Choose…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="112"/>
        <location filename="../settings_dialog.py" line="219"/>
        <source>Data folder</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="114"/>
        <source>Serve the local API on 127.0.0.1:8642</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="116"/>
        <source>OpenAI-compatible: other programs on this computer can ask your documents. Only this computer can connect.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="118"/>
        <source>API server</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="122"/>
        <source>System</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="124"/>
        <source>Takes effect the next time Hearth starts.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="125"/>
        <source>Language</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="173"/>
        <source>(default)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="175"/>
        <source>(unavailable)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="203"/>
        <source>No plan for this model.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="207"/>
        <source>{layers} of {total} layers on the GPU · GPU {gpu} · RAM {ram}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="210"/>
        <source>fits</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="210"/>
        <source>does not fit</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>Sidebar</name>
    <message>
        <location filename="../sidebar.py" line="42"/>
        <source>Workspaces</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../sidebar.py" line="47"/>
        <source>New workspace</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../sidebar.py" line="59"/>
        <source>Chats</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../sidebar.py" line="62"/>
        <source>New chat</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../sidebar.py" line="63"/>
        <source>Start a new conversation (Ctrl+N)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../sidebar.py" line="85"/>
        <source>Command-line name: {name}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../sidebar.py" line="122"/>
        <source>New workspace…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../sidebar.py" line="125"/>
        <source>Rename…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../sidebar.py" line="126"/>
        <source>Delete…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../sidebar.py" line="137"/>
        <source>Export as Markdown…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../sidebar.py" line="138"/>
        <source>Delete</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>SourceRow</name>
    <message>
        <location filename="../chat.py" line="136"/>
        <source>Open {file}</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>TextViewer</name>
    <message>
        <location filename="../text_viewer.py" line="58"/>
        <source>The text Hearth read from this document</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../text_viewer.py" line="63"/>
        <source>Open in its application</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../text_viewer.py" line="64"/>
        <source>Open the original file in the application your system uses for it</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../text_viewer.py" line="84"/>
        <source>{name} — Hearth</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../text_viewer.py" line="90"/>
        <source>The document changed since it was indexed: the passage is not in it now</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../text_viewer.py" line="109"/>
        <source>Quote highlighted</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>TurnCard</name>
    <message>
        <location filename="../chat.py" line="218"/>
        <source>Copy</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../chat.py" line="219"/>
        <source>Copy the answer as Markdown</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../chat.py" line="254"/>
        <source>*(not found in your documents)*</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../chat.py" line="270"/>
        <source>What the documents say</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../chat.py" line="271"/>
        <source>Supporting quotes</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../chat.py" line="277"/>
        <source>Sources</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../chat.py" line="285"/>
        <source>The model&apos;s reply was not borne out by the documents; their own words are shown instead.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../chat.py" line="288"/>
        <source>{seconds:.1f} s</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../chat.py" line="294"/>
        <location filename="../chat.py" line="295"/>
        <source>Stopped.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../chat.py" line="302"/>
        <source>No answer: {reason}</source>
        <translation type="unfinished"></translation>
    </message>
</context>
</TS>
