# SPDX-License-Identifier: MIT
#
# Cross-check of the SigV4 signer against botocore (Debian python3-botocore):
# sigv4_botocore_check.py signs a fixed set of S3 requests with botocore and
# with tests/tools/sigv4_sign.c and compares them. Exit 77 (botocore not
# installed) counts as skipped. Meant to be include()d from
# tests/CMakeLists.txt, after the tests/tools programs are defined.

add_test(NAME unit.sigv4_botocore
         COMMAND /usr/bin/python3
                 ${CMAKE_CURRENT_SOURCE_DIR}/unit/sigv4_botocore_check.py
                 $<TARGET_FILE:sigv4_sign>)
set_tests_properties(unit.sigv4_botocore PROPERTIES LABELS unit TIMEOUT 120
                     SKIP_RETURN_CODE 77)
