; hpvm's own test program in HPVM's LLVM 9 style: main launches a LEAF as the root, as
; HPVM's BuildDFG accepts (its OneRoot tests do), and a second graph (an internal root)
; from the same module. Pointers travel without sizes (i32* in %In), as in HPVM's pass tests.
;
; @Scale_cloned: Out[0] = 3 * In[0], returns Out. @Pair_cloned: a graph of @Add_cloned.
source_filename = "launched_leaf.c"
target datalayout = "e-m:e-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

%struct.out.Scale = type <{ i32* }>
%struct.out.Add = type <{ i32 }>
%struct.out.Pair = type <{ i32 }>
%struct.RootA = type { i32*, i32*, %struct.out.Scale }
%struct.RootB = type { i32, i32, %struct.out.Pair }

define dso_local %struct.out.Scale @Scale_cloned(i32* in %In, i32* out %Out) #0 {
entry:
  %v = load i32, i32* %In, align 4
  %m = mul nsw i32 %v, 3
  store i32 %m, i32* %Out, align 4
  %returnStruct = insertvalue %struct.out.Scale undef, i32* %Out, 0
  ret %struct.out.Scale %returnStruct
}

define dso_local %struct.out.Add @Add_cloned(i32 %a, i32 %b) #0 {
entry:
  %s = add nsw i32 %a, %b
  %returnStruct = insertvalue %struct.out.Add undef, i32 %s, 0
  ret %struct.out.Add %returnStruct
}

define dso_local %struct.out.Pair @Pair_cloned(i32 %a, i32 %b) #0 {
entry:
  %Add_cloned.node = call i8* @llvm.hpvm.createNode(i8* bitcast (%struct.out.Add (i32, i32)* @Add_cloned to i8*))
  call void @llvm.hpvm.bind.input(i8* %Add_cloned.node, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(i8* %Add_cloned.node, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.output(i8* %Add_cloned.node, i32 0, i32 0, i1 false)
  ret %struct.out.Pair undef
}

define dso_local i32 @main() #0 {
entry:
  %A = alloca %struct.RootA, align 8
  %B = alloca %struct.RootB, align 8
  call void @llvm.hpvm.init()
  %a = bitcast %struct.RootA* %A to i8*
  %g1 = call i8* @llvm.hpvm.launch(i8* bitcast (%struct.out.Scale (i32*, i32*)* @Scale_cloned to i8*), i8* %a, i1 false)
  call void @llvm.hpvm.wait(i8* %g1)
  %b = bitcast %struct.RootB* %B to i8*
  %g2 = call i8* @llvm.hpvm.launch(i8* bitcast (%struct.out.Pair (i32, i32)* @Pair_cloned to i8*), i8* %b, i1 false)
  call void @llvm.hpvm.wait(i8* %g2)
  call void @llvm.hpvm.cleanup()
  ret i32 0
}

declare i8* @llvm.hpvm.createNode(i8*) #1
declare void @llvm.hpvm.bind.input(i8*, i32, i32, i1) #1
declare void @llvm.hpvm.bind.output(i8*, i32, i32, i1) #1
declare void @llvm.hpvm.init() #1
declare i8* @llvm.hpvm.launch(i8*, i8*, i1) #1
declare void @llvm.hpvm.wait(i8*) #1
declare void @llvm.hpvm.cleanup() #1

attributes #0 = { nounwind uwtable }
attributes #1 = { nounwind }

!hpvm_hint_cpu = !{!0, !1, !2}
!0 = !{%struct.out.Scale (i32*, i32*)* @Scale_cloned}
!1 = !{%struct.out.Add (i32, i32)* @Add_cloned}
!2 = !{%struct.out.Pair (i32, i32)* @Pair_cloned}
