; A VGG block with its classifier, written as HPVM's GenHPVM writes the HPVM IR of its DNN
; benchmarks (approxhpvm's src.cc through clang 9 and GenHPVM; LLVM 9 text): one node function
; per tensor operation, each taking its tensors as (i8*, i64) pairs, hinted through
; !hpvm_hint_cudnn and returning a packed { i8*, i64 } with a size of 0; a root binding the
; weights and chaining the layers with createEdge; a packed RootIn struct and a main that
; launches the root with llvm.hpvm.launch.
;
; conv 3x3 (64 -> 64) + bias, relu; conv 3x3 (64 -> 64) + bias, relu, 2x2 max pool; dense
; (4096 -> 10) + bias, softmax.
; ModuleID = 'vgg_block.cc'
source_filename = "vgg_block.cc"
target datalayout = "e-m:e-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

%struct.ret_t = type { i8*, i64 }
%struct.RootIn = type <{ i8*, i64, i8*, i64, i8*, i64, i8*, i64, i8*, i64, i8*, i64, i8*, i64, %struct.ret_t }>
%struct.out.var_0_node = type <{ i8*, i64 }>
%struct.out.var_1_node = type <{ i8*, i64 }>
%struct.out.var_2_node = type <{ i8*, i64 }>
%struct.out.var_3_node = type <{ i8*, i64 }>
%struct.out.var_4_node = type <{ i8*, i64 }>
%struct.out.var_5_node = type <{ i8*, i64 }>
%struct.out.var_6_node = type <{ i8*, i64 }>
%struct.out.var_7_node = type <{ i8*, i64 }>
%struct.out.var_8_node = type <{ i8*, i64 }>
%struct.out.var_9_node = type <{ i8*, i64 }>
%struct.out.root = type <{ i8*, i64 }>

; conv2d_1: 3x3, 64 filters, padding 1, stride 1
; Function Attrs: nounwind uwtable
define dso_local %struct.out.var_0_node @var_0_node_cloned(i8* in %t1, i64 %bytes_t1, i8* in %t2, i64 %bytes_t2) #0 {
entry:
  %call = call i8* @llvm.hpvm.tensor.convolution(i8* %t1, i8* %t2, i32 1, i32 1, i32 1, i32 1)
  %returnStruct = insertvalue %struct.out.var_0_node undef, i8* %call, 0
  %returnStruct1 = insertvalue %struct.out.var_0_node %returnStruct, i64 0, 1
  ret %struct.out.var_0_node %returnStruct1
}

; + conv2d_1's bias, (1, 64, 1, 1)
; Function Attrs: nounwind uwtable
define dso_local %struct.out.var_1_node @var_1_node_cloned(i8* in %t1, i64 %bytes_t1, i8* in %t2, i64 %bytes_t2) #0 {
entry:
  %call = call i8* @llvm.hpvm.tensor.add(i8* %t1, i8* %t2)
  %returnStruct = insertvalue %struct.out.var_1_node undef, i8* %call, 0
  %returnStruct1 = insertvalue %struct.out.var_1_node %returnStruct, i64 0, 1
  ret %struct.out.var_1_node %returnStruct1
}

; Function Attrs: nounwind uwtable
define dso_local %struct.out.var_2_node @var_2_node_cloned(i8* in %t1, i64 %bytes_t1) #0 {
entry:
  %call = call i8* @llvm.hpvm.tensor.relu(i8* %t1)
  %returnStruct = insertvalue %struct.out.var_2_node undef, i8* %call, 0
  %returnStruct1 = insertvalue %struct.out.var_2_node %returnStruct, i64 0, 1
  ret %struct.out.var_2_node %returnStruct1
}

; conv2d_2: 3x3, 64 filters, padding 1, stride 1
; Function Attrs: nounwind uwtable
define dso_local %struct.out.var_3_node @var_3_node_cloned(i8* in %t1, i64 %bytes_t1, i8* in %t2, i64 %bytes_t2) #0 {
entry:
  %call = call i8* @llvm.hpvm.tensor.convolution(i8* %t1, i8* %t2, i32 1, i32 1, i32 1, i32 1)
  %returnStruct = insertvalue %struct.out.var_3_node undef, i8* %call, 0
  %returnStruct1 = insertvalue %struct.out.var_3_node %returnStruct, i64 0, 1
  ret %struct.out.var_3_node %returnStruct1
}

; Function Attrs: nounwind uwtable
define dso_local %struct.out.var_4_node @var_4_node_cloned(i8* in %t1, i64 %bytes_t1, i8* in %t2, i64 %bytes_t2) #0 {
entry:
  %call = call i8* @llvm.hpvm.tensor.add(i8* %t1, i8* %t2)
  %returnStruct = insertvalue %struct.out.var_4_node undef, i8* %call, 0
  %returnStruct1 = insertvalue %struct.out.var_4_node %returnStruct, i64 0, 1
  ret %struct.out.var_4_node %returnStruct1
}

; Function Attrs: nounwind uwtable
define dso_local %struct.out.var_5_node @var_5_node_cloned(i8* in %t1, i64 %bytes_t1) #0 {
entry:
  %call = call i8* @llvm.hpvm.tensor.relu(i8* %t1)
  %returnStruct = insertvalue %struct.out.var_5_node undef, i8* %call, 0
  %returnStruct1 = insertvalue %struct.out.var_5_node %returnStruct, i64 0, 1
  ret %struct.out.var_5_node %returnStruct1
}

; 2x2 max pool, stride 2: 64 x 8 x 8
; Function Attrs: nounwind uwtable
define dso_local %struct.out.var_6_node @var_6_node_cloned(i8* in %t1, i64 %bytes_t1) #0 {
entry:
  %call = call i8* @llvm.hpvm.tensor.pool.max(i8* %t1, i32 2, i32 2, i32 0, i32 0, i32 2, i32 2)
  %returnStruct = insertvalue %struct.out.var_6_node undef, i8* %call, 0
  %returnStruct1 = insertvalue %struct.out.var_6_node %returnStruct, i64 0, 1
  ret %struct.out.var_6_node %returnStruct1
}

; dense_1: (1, 1, 4096, 10)
; Function Attrs: nounwind uwtable
define dso_local %struct.out.var_7_node @var_7_node_cloned(i8* in %t1, i64 %bytes_t1, i8* in %t2, i64 %bytes_t2) #0 {
entry:
  %call = call i8* @llvm.hpvm.tensor.mul(i8* %t1, i8* %t2)
  %returnStruct = insertvalue %struct.out.var_7_node undef, i8* %call, 0
  %returnStruct1 = insertvalue %struct.out.var_7_node %returnStruct, i64 0, 1
  ret %struct.out.var_7_node %returnStruct1
}

; Function Attrs: nounwind uwtable
define dso_local %struct.out.var_8_node @var_8_node_cloned(i8* in %t1, i64 %bytes_t1, i8* in %t2, i64 %bytes_t2) #0 {
entry:
  %call = call i8* @llvm.hpvm.tensor.add(i8* %t1, i8* %t2)
  %returnStruct = insertvalue %struct.out.var_8_node undef, i8* %call, 0
  %returnStruct1 = insertvalue %struct.out.var_8_node %returnStruct, i64 0, 1
  ret %struct.out.var_8_node %returnStruct1
}

; Function Attrs: nounwind uwtable
define dso_local %struct.out.var_9_node @var_9_node_cloned(i8* in %t1, i64 %bytes_t1) #0 {
entry:
  %call = call i8* @llvm.hpvm.tensor.softmax(i8* %t1)
  %returnStruct = insertvalue %struct.out.var_9_node undef, i8* %call, 0
  %returnStruct1 = insertvalue %struct.out.var_9_node %returnStruct, i64 0, 1
  ret %struct.out.var_9_node %returnStruct1
}

; Function Attrs: nounwind uwtable
define dso_local %struct.out.root @root_cloned(i8* in %input, i64 %input_bytes, i8* in %conv2d_1_w, i64 %conv2d_1_w_bytes, i8* in %conv2d_1_b, i64 %conv2d_1_b_bytes, i8* in %conv2d_2_w, i64 %conv2d_2_w_bytes, i8* in %conv2d_2_b, i64 %conv2d_2_b_bytes, i8* in %dense_1_w, i64 %dense_1_w_bytes, i8* in %dense_1_b, i64 %dense_1_b_bytes) #0 {
entry:
  %var_0_node_cloned.node = call i8* @llvm.hpvm.createNode(i8* bitcast (%struct.out.var_0_node (i8*, i64, i8*, i64)* @var_0_node_cloned to i8*))
  call void @llvm.hpvm.bind.input(i8* %var_0_node_cloned.node, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(i8* %var_0_node_cloned.node, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(i8* %var_0_node_cloned.node, i32 2, i32 2, i1 false)
  call void @llvm.hpvm.bind.input(i8* %var_0_node_cloned.node, i32 3, i32 3, i1 false)
  %var_1_node_cloned.node = call i8* @llvm.hpvm.createNode(i8* bitcast (%struct.out.var_1_node (i8*, i64, i8*, i64)* @var_1_node_cloned to i8*))
  %var_1_node_cloned.edge0 = call i8* @llvm.hpvm.createEdge(i8* %var_0_node_cloned.node, i8* %var_1_node_cloned.node, i1 true, i32 0, i32 0, i1 false)
  %var_1_node_cloned.edge1 = call i8* @llvm.hpvm.createEdge(i8* %var_0_node_cloned.node, i8* %var_1_node_cloned.node, i1 true, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(i8* %var_1_node_cloned.node, i32 4, i32 2, i1 false)
  call void @llvm.hpvm.bind.input(i8* %var_1_node_cloned.node, i32 5, i32 3, i1 false)
  %var_2_node_cloned.node = call i8* @llvm.hpvm.createNode(i8* bitcast (%struct.out.var_2_node (i8*, i64)* @var_2_node_cloned to i8*))
  %var_2_node_cloned.edge0 = call i8* @llvm.hpvm.createEdge(i8* %var_1_node_cloned.node, i8* %var_2_node_cloned.node, i1 true, i32 0, i32 0, i1 false)
  %var_2_node_cloned.edge1 = call i8* @llvm.hpvm.createEdge(i8* %var_1_node_cloned.node, i8* %var_2_node_cloned.node, i1 true, i32 1, i32 1, i1 false)
  %var_3_node_cloned.node = call i8* @llvm.hpvm.createNode(i8* bitcast (%struct.out.var_3_node (i8*, i64, i8*, i64)* @var_3_node_cloned to i8*))
  %var_3_node_cloned.edge0 = call i8* @llvm.hpvm.createEdge(i8* %var_2_node_cloned.node, i8* %var_3_node_cloned.node, i1 true, i32 0, i32 0, i1 false)
  %var_3_node_cloned.edge1 = call i8* @llvm.hpvm.createEdge(i8* %var_2_node_cloned.node, i8* %var_3_node_cloned.node, i1 true, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(i8* %var_3_node_cloned.node, i32 6, i32 2, i1 false)
  call void @llvm.hpvm.bind.input(i8* %var_3_node_cloned.node, i32 7, i32 3, i1 false)
  %var_4_node_cloned.node = call i8* @llvm.hpvm.createNode(i8* bitcast (%struct.out.var_4_node (i8*, i64, i8*, i64)* @var_4_node_cloned to i8*))
  %var_4_node_cloned.edge0 = call i8* @llvm.hpvm.createEdge(i8* %var_3_node_cloned.node, i8* %var_4_node_cloned.node, i1 true, i32 0, i32 0, i1 false)
  %var_4_node_cloned.edge1 = call i8* @llvm.hpvm.createEdge(i8* %var_3_node_cloned.node, i8* %var_4_node_cloned.node, i1 true, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(i8* %var_4_node_cloned.node, i32 8, i32 2, i1 false)
  call void @llvm.hpvm.bind.input(i8* %var_4_node_cloned.node, i32 9, i32 3, i1 false)
  %var_5_node_cloned.node = call i8* @llvm.hpvm.createNode(i8* bitcast (%struct.out.var_5_node (i8*, i64)* @var_5_node_cloned to i8*))
  %var_5_node_cloned.edge0 = call i8* @llvm.hpvm.createEdge(i8* %var_4_node_cloned.node, i8* %var_5_node_cloned.node, i1 true, i32 0, i32 0, i1 false)
  %var_5_node_cloned.edge1 = call i8* @llvm.hpvm.createEdge(i8* %var_4_node_cloned.node, i8* %var_5_node_cloned.node, i1 true, i32 1, i32 1, i1 false)
  %var_6_node_cloned.node = call i8* @llvm.hpvm.createNode(i8* bitcast (%struct.out.var_6_node (i8*, i64)* @var_6_node_cloned to i8*))
  %var_6_node_cloned.edge0 = call i8* @llvm.hpvm.createEdge(i8* %var_5_node_cloned.node, i8* %var_6_node_cloned.node, i1 true, i32 0, i32 0, i1 false)
  %var_6_node_cloned.edge1 = call i8* @llvm.hpvm.createEdge(i8* %var_5_node_cloned.node, i8* %var_6_node_cloned.node, i1 true, i32 1, i32 1, i1 false)
  %var_7_node_cloned.node = call i8* @llvm.hpvm.createNode(i8* bitcast (%struct.out.var_7_node (i8*, i64, i8*, i64)* @var_7_node_cloned to i8*))
  %var_7_node_cloned.edge0 = call i8* @llvm.hpvm.createEdge(i8* %var_6_node_cloned.node, i8* %var_7_node_cloned.node, i1 true, i32 0, i32 0, i1 false)
  %var_7_node_cloned.edge1 = call i8* @llvm.hpvm.createEdge(i8* %var_6_node_cloned.node, i8* %var_7_node_cloned.node, i1 true, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(i8* %var_7_node_cloned.node, i32 10, i32 2, i1 false)
  call void @llvm.hpvm.bind.input(i8* %var_7_node_cloned.node, i32 11, i32 3, i1 false)
  %var_8_node_cloned.node = call i8* @llvm.hpvm.createNode(i8* bitcast (%struct.out.var_8_node (i8*, i64, i8*, i64)* @var_8_node_cloned to i8*))
  %var_8_node_cloned.edge0 = call i8* @llvm.hpvm.createEdge(i8* %var_7_node_cloned.node, i8* %var_8_node_cloned.node, i1 true, i32 0, i32 0, i1 false)
  %var_8_node_cloned.edge1 = call i8* @llvm.hpvm.createEdge(i8* %var_7_node_cloned.node, i8* %var_8_node_cloned.node, i1 true, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(i8* %var_8_node_cloned.node, i32 12, i32 2, i1 false)
  call void @llvm.hpvm.bind.input(i8* %var_8_node_cloned.node, i32 13, i32 3, i1 false)
  %var_9_node_cloned.node = call i8* @llvm.hpvm.createNode(i8* bitcast (%struct.out.var_9_node (i8*, i64)* @var_9_node_cloned to i8*))
  %var_9_node_cloned.edge0 = call i8* @llvm.hpvm.createEdge(i8* %var_8_node_cloned.node, i8* %var_9_node_cloned.node, i1 true, i32 0, i32 0, i1 false)
  %var_9_node_cloned.edge1 = call i8* @llvm.hpvm.createEdge(i8* %var_8_node_cloned.node, i8* %var_9_node_cloned.node, i1 true, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.output(i8* %var_9_node_cloned.node, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.output(i8* %var_9_node_cloned.node, i32 1, i32 1, i1 false)
  ret %struct.out.root undef
}

; Function Attrs: norecurse nounwind uwtable
define dso_local i32 @main() local_unnamed_addr #1 {
entry:
  %args = alloca %struct.RootIn, align 1
  %0 = bitcast %struct.RootIn* %args to i8*
  call void @llvm.lifetime.start.p0i8(i64 128, i8* nonnull %0) #2
  call void @llvm.hpvm.init()
  %graphID = call i8* @llvm.hpvm.launch(i8* bitcast (%struct.out.root (i8*, i64, i8*, i64, i8*, i64, i8*, i64, i8*, i64, i8*, i64, i8*, i64)* @root_cloned to i8*), i8* nonnull %0, i1 false)
  call void @llvm.hpvm.wait(i8* %graphID)
  call void @llvm.hpvm.cleanup()
  call void @llvm.lifetime.end.p0i8(i64 128, i8* nonnull %0) #2
  ret i32 0
}

; Function Attrs: nounwind
declare i8* @llvm.hpvm.tensor.convolution(i8*, i8*, i32, i32, i32, i32) #2

; Function Attrs: nounwind
declare i8* @llvm.hpvm.tensor.add(i8*, i8*) #2

; Function Attrs: nounwind
declare i8* @llvm.hpvm.tensor.relu(i8*) #2

; Function Attrs: nounwind
declare i8* @llvm.hpvm.tensor.pool.max(i8*, i32, i32, i32, i32, i32, i32) #2

; Function Attrs: nounwind
declare i8* @llvm.hpvm.tensor.mul(i8*, i8*) #2

; Function Attrs: nounwind
declare i8* @llvm.hpvm.tensor.softmax(i8*) #2

; Function Attrs: nounwind
declare i8* @llvm.hpvm.createNode(i8*) #2

; Function Attrs: nounwind
declare i8* @llvm.hpvm.createEdge(i8*, i8*, i1, i32, i32, i1) #2

; Function Attrs: nounwind
declare void @llvm.hpvm.bind.input(i8*, i32, i32, i1) #2

; Function Attrs: nounwind
declare void @llvm.hpvm.bind.output(i8*, i32, i32, i1) #2

; Function Attrs: nounwind
declare void @llvm.hpvm.init() #2

; Function Attrs: nounwind
declare i8* @llvm.hpvm.launch(i8*, i8*, i1) #2

; Function Attrs: nounwind
declare void @llvm.hpvm.wait(i8*) #2

; Function Attrs: nounwind
declare void @llvm.hpvm.cleanup() #2

; Function Attrs: argmemonly nounwind
declare void @llvm.lifetime.start.p0i8(i64 immarg, i8* nocapture) #3

; Function Attrs: argmemonly nounwind
declare void @llvm.lifetime.end.p0i8(i64 immarg, i8* nocapture) #3

attributes #0 = { nounwind uwtable "correctly-rounded-divide-sqrt-fp-math"="false" "disable-tail-calls"="false" "less-precise-fpmad"="false" "min-legal-vector-width"="0" "no-frame-pointer-elim"="false" "no-infs-fp-math"="false" "no-jump-tables"="false" "no-nans-fp-math"="false" "no-signed-zeros-fp-math"="false" "no-trapping-math"="false" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "unsafe-fp-math"="false" "use-soft-float"="false" }
attributes #1 = { norecurse nounwind uwtable "no-frame-pointer-elim"="false" "target-cpu"="x86-64" }
attributes #2 = { nounwind }
attributes #3 = { argmemonly nounwind }

!llvm.module.flags = !{!0}
!llvm.ident = !{!1}
!hpvm_hint_cpu = !{!12}
!hpvm_hint_gpu = !{}
!hpvm_hint_cpu_gpu = !{}
!hpvm_hint_cudnn = !{!2, !3, !4, !5, !6, !7, !8, !9, !10, !11}
!hpvm_hint_promise = !{}

!0 = !{i32 1, !"wchar_size", i32 4}
!1 = !{!"clang version 9.0.0"}
!2 = !{%struct.out.var_0_node (i8*, i64, i8*, i64)* @var_0_node_cloned}
!3 = !{%struct.out.var_1_node (i8*, i64, i8*, i64)* @var_1_node_cloned}
!4 = !{%struct.out.var_2_node (i8*, i64)* @var_2_node_cloned}
!5 = !{%struct.out.var_3_node (i8*, i64, i8*, i64)* @var_3_node_cloned}
!6 = !{%struct.out.var_4_node (i8*, i64, i8*, i64)* @var_4_node_cloned}
!7 = !{%struct.out.var_5_node (i8*, i64)* @var_5_node_cloned}
!8 = !{%struct.out.var_6_node (i8*, i64)* @var_6_node_cloned}
!9 = !{%struct.out.var_7_node (i8*, i64, i8*, i64)* @var_7_node_cloned}
!10 = !{%struct.out.var_8_node (i8*, i64, i8*, i64)* @var_8_node_cloned}
!11 = !{%struct.out.var_9_node (i8*, i64)* @var_9_node_cloned}
!12 = !{%struct.out.root (i8*, i64, i8*, i64, i8*, i64, i8*, i64, i8*, i64, i8*, i64, i8*, i64)* @root_cloned}
