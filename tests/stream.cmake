# Replies that carry a job's log, and lists, are bounded (issue 28, item 1;
# tests/tools/stream_test.py says what each checks). stream_memory: 16
# control shows, 16 HTTP job GETs and 4 event streams of an 8 MiB log that
# never read: quald's peak RSS grows by under 48 MiB (a quald that reads the
# log whole for each grew by 256 MiB), status is answered, and readers get
# every line. stream_replay: a watch's replay of it reads it about once (a
# quald that paused read it again from the start each time: 8 times), and a
# resume near its end reads little. stream_list: list replies of 128 KiB jobs in pages of at most
# 512 KiB, followed by qualctl list. stream_nofile: 700 non-reading shows
# of a 2 MiB log at an open file limit of 1200 leave room for a new job's
# log (each show's cursor holds a descriptor: quald counts two per
# connection). Fake workers; shim_noabi as the libraries (nothing loads
# them).
foreach(s memory replay list nofile)
  add_test(NAME stream_${s}
           COMMAND ${SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/stream_test.py
                   --quald $<TARGET_FILE:quald> --qualctl $<TARGET_FILE:qualctl>
                   --elf $<TARGET_FILE:shim_noabi> ${s})
  set_tests_properties(stream_${s} PROPERTIES LABELS integration TIMEOUT 60
                       SKIP_RETURN_CODE 77)
endforeach()
